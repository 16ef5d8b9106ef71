"""The system's refusals, each named in full (model/values/errors.py: an illegal transition names the state, the
event and why; a ConfigError the field, the value and what is allowed): a POP side for a 4.x profile, a POP request
in a cluster without POP or a request nothing answers, a POP consumer of a group that is not a POP group, and a
drain that cannot end. Also the drain's order of completing running listeners (SY-03): the smallest request id
first."""

from __future__ import annotations

import pytest

from model.broker.pop.state import PopGroupConfig
from model.client.pop_consumer import PopConsumer
from model.system.drain import drain, get_first_request
from model.system.events import AddPopConsumer, Produce
from model.system.pop_route import enable_pop, route_pop
from model.system.step import create_system, step
from model.values.config import Config
from model.values.errors import ConfigError, IllegalTransition
from model.values.names import TOPIC
from model.values.pop_wire import PopRequest
from model.values.wire import SendBackRequest

POP_GROUPS = {"GP": PopGroupConfig()}


def get_illegal(call, *args, **kwargs) -> tuple[str, str, str, str]:
    """The IllegalTransition `call(*args, **kwargs)` raises: its state, event, reason and message."""
    with pytest.raises(IllegalTransition) as illegal:
        call(*args, **kwargs)
    error = illegal.value
    return error.state, error.event, error.reason, str(error)


def test_a_4x_profile_gets_no_pop_side():
    """POP is a 5.x broker's (PopMessageProcessor is new in 5.0.0; 4.9.8 has no POP request code): a 4.9.8 cluster
    given POP groups is a ConfigError naming the field, the value and what is allowed."""
    with pytest.raises(ConfigError) as error:
        enable_pop(create_system(Config(profile="4.9.8"), ()), POP_GROUPS)
    assert (error.value.field, error.value.value) == ("profile", "4.9.8")
    assert error.value.allowed == "a profile with server-side retry (5.0.0 or later)"
    assert str(error.value) == ("profile='4.9.8' is not allowed: expected a profile with server-side retry"
                                " (5.0.0 or later)")


def test_a_pop_request_in_a_cluster_without_pop_is_illegal():
    """A 5.3.3 cluster created without POP groups answers no POP request: the refusal names the state ("no POP"),
    the event and why."""
    system = create_system(Config(profile="5.3.3"), ())
    assert get_illegal(route_pop, system, PopRequest("GP", TOPIC), 0) == (
        "no POP", "route", "nothing answers this request in this cluster",
        "event route is illegal in state no POP: nothing answers this request in this cluster")


def test_a_request_no_pop_answer_takes_is_illegal_in_a_pop_cluster():
    """A request that is not a POP one (a 4.x send-back) routed to the POP side of a POP cluster: the refusal
    names the request's type as the state, whatever the cluster."""
    system = create_system(Config(profile="5.3.3"), (), pop_groups=POP_GROUPS)
    request = SendBackRequest("GP", TOPIC, 0, 1, "m0", 16)
    assert get_illegal(route_pop, system, request, 0) == (
        "SendBackRequest", "route", "nothing answers this request in this cluster",
        "event route is illegal in state SendBackRequest: nothing answers this request in this cluster")


def test_a_pop_consumer_of_a_group_that_is_not_a_pop_group_is_illegal():
    """AddPopConsumer of a group the POP cluster was not created with (its subscription group config and POP
    settings unknown) is refused, naming the group; in a cluster without POP too."""
    pop_cluster = create_system(Config(profile="5.3.3"), (), pop_groups=POP_GROUPS)
    plain = create_system(Config(profile="5.3.3"), ())
    for system in (pop_cluster, plain):
        assert get_illegal(step, system, AddPopConsumer(PopConsumer("p1", "GQ", 0, False))) == (
            "no POP group GQ", "AddPopConsumer", "create_system(pop_groups=...) names them",
            "event AddPopConsumer is illegal in state no POP group GQ: create_system(pop_groups=...) names them")


def test_a_drain_with_no_live_consumer_and_a_message_left_is_illegal():
    """SY-03: a stored message with no consumer instance to pull it never becomes quiescent and nothing is left
    on the timers: the drain says so instead of spinning."""
    system, _ = step(create_system(Config(), ()), Produce("m0"))
    assert get_illegal(drain, system) == (
        "idle but not quiescent", "drain", "no timer left (no live consumer?)",
        "event drain is illegal in state idle but not quiescent: no timer left (no live consumer?)")


def test_a_drain_stops_after_max_events_and_not_one_before():
    """SY-03's bound: a drain that needs n events ends with max_events n and is refused with max_events n - 1,
    naming the bound."""
    system, _ = step(create_system(Config()), Produce("m0"))
    _, _, needed = drain(system)
    assert drain(system, max_events=needed)[2] == needed
    assert get_illegal(drain, system, max_events=needed - 1) == (
        "not quiescent", "drain", f"still busy after {needed - 1} events",
        f"event drain is illegal in state not quiescent: still busy after {needed - 1} events")


def test_the_first_request_is_the_smallest_running_id():
    """Ids only grow and a drain completes the smallest running one first: with the last first one (the hint)
    still running it is first, even when the next id runs too; once it ended the next id is first, even when a
    later one runs too; and with neither running, the smallest of the rest."""
    assert get_first_request({5: "r5", 6: "r6"}, 5) == "r5"
    assert get_first_request({6: "r6", 7: "r7"}, 5) == "r6"
    assert get_first_request({8: "r8", 9: "r9"}, 5) == "r8"


def test_a_drain_counts_each_event_it_processed_once():
    """The drain's count is of the events it processed: as many as the times it handed one event's observations
    to `observe` (a drain that ends quiescent, with no livelock, hands each event's once)."""
    system, _ = step(create_system(Config()), Produce("m0"))
    handed = []
    _, kept, events = drain(system, observe=handed.append)
    assert kept == []
    assert events == len(handed) > 0
