"""DT-04's time order, with levels that have nothing scheduled (spec/04-delay-timer.md).

The broker's due times hold one entry per level up to the highest one in use, None for a level with no task. mutmut
found the out-of-order check unexamined over such a gap (benchmarks/MUTATION.md, group m): a timer past a due level
must still name the levels due, not fail on comparing a missing due time.
"""

from __future__ import annotations

import pytest

from model.broker.delay_timer import compute_due_cache, on_schedule_timer
from model.broker.state import Broker
from model.values.config import Config
from model.values.errors import IllegalTransition
from properties.test_delay_timer import send
from properties.test_store import REFERENCE_DELAY_SECONDS


@pytest.mark.parametrize("level", [2, 3, 5])
def test_a_timer_past_a_due_level_above_unused_levels_names_only_that_level(level):
    """DT-04: a message parked at a level at 0, the levels below it unused, makes that level due after its delay
    (messageDelayLevel's default); a timer at twice that is out of order, and the error names that level alone as
    the state, and the timer as the event."""
    config = Config()
    broker = send(Broker(), config, "a", level, 0)
    due = REFERENCE_DELAY_SECONDS[level - 1] * 1000
    assert compute_due_cache(broker, config).dues == (*[None] * (level - 1), due)
    with pytest.raises(IllegalTransition) as raised:
        on_schedule_timer(broker, config, due * 2)
    assert raised.value.state.startswith(f"levels [{level}] due")
    assert raised.value.event == f"schedule timer at {due * 2}"
