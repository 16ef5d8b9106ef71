"""The rule x backend table of a run (reports/differential.py renders it), written next to the run's reports as
``differential-rules.md``; the main job's summary.md shows it too.

Run: python -m differential.table [RUN_DIR]   (default: the newest run under the reports directory)
"""

from __future__ import annotations

import sys
from pathlib import Path

from reports.differential import BACKENDS, BROKER_RULES, find_newest_records, read_records, render_table
from runenv.run_context import get_reports_dir

__all__ = ["BACKENDS", "BROKER_RULES", "main"]


def main(argv: list[str]) -> None:
    run_dir = Path(argv[0]) if argv else find_newest_records([str(get_reports_dir())])
    if run_dir is None:
        raise SystemExit(f"no differential records under {get_reports_dir()}")
    table = render_table(read_records(run_dir))
    (run_dir / "differential-rules.md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
