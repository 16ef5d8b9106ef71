"""tox plugin, loaded by tox 4 from the project root: one report run id for all envs of one tox invocation.

Every configuration env writes its report files under reports/runs/<run id>/, so the `aggregate` env sees one run
with one writer per configuration. Set RMQSPEC_RUN_ID yourself to gather several invocations (or CI jobs) in one run.
"""

import os
import time

os.environ.setdefault("RMQSPEC_RUN_ID", time.strftime("tox-%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{os.getpid()}")
