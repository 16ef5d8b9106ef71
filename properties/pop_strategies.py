"""Names and draws for the properties of the 5.x chapters (spec/14-pop.md to spec/19-pop-guarantees.md); the
brokers they start from are built in properties/pop_brokers.py.

The expectations in the tests are written from the chapters' rules (and RocketMQ's source they cite), never read
back from the model.
"""

from __future__ import annotations

from hypothesis import strategies as st

GROUP = "G"
TOPIC = "T"
RETRY_V1 = "%RETRY%G_T"
DLQ = "%DLQ%G"
# PopAckConstants: ackTimeInterval + 1 s, the revive margin of IV-01.
REVIVE_MARGIN = 2000

RANDOM_Q = st.integers(0, 99)
INVISIBLE = st.integers(1_000, 60_000)
TAGS = st.sampled_from(["a", "b"])
