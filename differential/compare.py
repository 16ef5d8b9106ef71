"""Runs one sequence on several backends and compares what they did."""

from __future__ import annotations

import attrs

from conformance.runner.backends.broker_client import BrokerClient
from differential.example import Names, Outcome, Run, settle
from differential.steps import Step

SETTLE_TIMEOUT = 6.0  # every delay is 1 s; a parked message not delivered by then is a difference
DELAY_MS = 1000
DELAY_TOLERANCE_MS = 500  # the timer re-checks a level every 100 ms (DT-02); the rest is scheduling slack


@attrs.frozen
class Target:
    """A backend to send examples to: its broker address and the broker name it answers lock requests with."""

    name: str
    broker_addr: str
    broker_name: str


def run_sequence(targets: list[Target], sequence: list[Step]) -> dict[str, Outcome]:
    """Sends `sequence` to each target under fresh names, then waits for their delayed messages."""
    clients = [BrokerClient(t.broker_addr) for t in targets]
    try:
        runs = [Run(c, t.broker_name, Names()) for c, t in zip(clients, targets, strict=True)]
        marks = []
        for run in runs:
            run.set_up()
            marks.append(run.get_schedule_marks())
            run.run(sequence)
        return {t.name: settle(run, m, SETTLE_TIMEOUT) for t, run, m in zip(targets, runs, marks, strict=True)}
    finally:
        for client in clients:
            client.close()


def get_late_or_early(outcome: Outcome) -> list[int | None]:
    """Delivery delays outside [DELAY_MS, DELAY_MS + DELAY_TOLERANCE_MS] (None: never delivered)."""
    return [d for d in outcome.delivery_delays if d is None or not DELAY_MS <= d <= DELAY_MS + DELAY_TOLERANCE_MS]


def describe_differences(a: tuple[str, Outcome], b: tuple[str, Outcome]) -> list[str]:
    """One line per difference between two outcomes: the first differing step, parked set, landed topics."""
    (name_a, out_a), (name_b, out_b) = a, b
    lines = []
    for i, (x, y) in enumerate(zip(out_a.observations, out_b.observations, strict=True)):
        if x != y:
            lines.append(f"step {i}: {name_a} {x} != {name_b} {y}")
            break
    if out_a.parked != out_b.parked:
        lines.append(f"parked: {name_a} {out_a.parked} != {name_b} {out_b.parked}")
    for topic in sorted(set(out_a.landed) | set(out_b.landed)):
        x, y = out_a.landed.get(topic, []), out_b.landed.get(topic, [])
        if x != y:
            lines.append(f"landed in {topic}: {name_a} {x} != {name_b} {y}")
    return lines
