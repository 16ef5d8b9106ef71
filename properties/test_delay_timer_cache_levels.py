"""DT-01 with a delay table shorter than the schedule queues (spec/04-delay-timer.md): the broker restarted with
fewer messageDelayLevel entries schedules a task only for each configured level, so a message parked at a higher
level is never delivered, while the configured levels still deliver on time.

mutmut found unchecked the due-time cache's cut of the schedule queues to the configured levels (benchmarks/
MUTATION.md, group q): no test ran the timer with more schedule queues than delay levels.
"""

from __future__ import annotations

from model.broker.delay_timer import get_next_schedule_time, on_broker_restart, process_schedule_until
from model.broker.state import Broker
from model.values.config import Config
from properties.test_delay_timer import get_delivery_times, send

RESTART = 500
TWO_LEVELS = "1s 5s"


def test_a_level_dropped_from_the_delay_table_is_not_run_after_a_restart():
    """DT-01: start() schedules one DeliverDelayedMessageTimerTask per entry of delayLevelTable, first run
    FIRST_DELAY_TIME = 1000 ms after the start (ScheduleMessageService 4.9.8 L58, L128-L149); a schedule queue of a
    level not in the table gets no task. Parked at 0 at level 1 (1s) and level 18 (2h, the default table), then a
    crash at 500 and a restart with the table "1s 5s": level 1 is first run at 1500 and delivers its message (deliver
    time 1000 <= 1500); the level-18 message is never delivered, nor does anything else remain scheduled."""
    config = Config()
    broker = send(Broker(), config, "one", 1, 0)
    broker = send(broker, config, "eighteen", 18, 0)
    short = Config(message_delay_level=TWO_LEVELS)
    broker = on_broker_restart(broker, short, RESTART)
    assert get_next_schedule_time(broker, short) == RESTART + 1000
    broker, deliveries = process_schedule_until(broker, short, 10 * 3600 * 1000)
    assert get_delivery_times(deliveries) == [("one", RESTART + 1000)]
    assert get_next_schedule_time(broker, short) is None  # the offset flush (DT-08) ran too: nothing is left
