"""Driving the system step by hand in focused tests: events in order, observations collected."""

from __future__ import annotations

from model.system.events import CompleteConsume
from model.system.step import step


def run(system, *events):
    """Steps `system` through `events`; returns the last system and every observation, in order."""
    seen = []
    for ev in events:
        system, observations = step(system, ev)
        seen.extend(observations)
    return system, seen


def complete_running(system):
    """Every running listener returns CONSUME_SUCCESS, at the current instant (no timer fires)."""
    while system.requests:
        system, _ = step(system, CompleteConsume(min(system.requests)))
    return system
