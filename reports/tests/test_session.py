"""The session's life cycle around the JVM it launches (no JVM here: a stand-in gateway)."""

from __future__ import annotations

import types

from reports.session import shut_down_gateway


class StandInGateway:
    def __init__(self, exit_code):
        self.proc = types.SimpleNamespace(poll=lambda: exit_code)
        self.shut_down = 0

    def shutdown(self):
        self.shut_down += 1


def session_of(gateway):
    return types.SimpleNamespace(sparkContext=types.SimpleNamespace(_gateway=gateway))


def test_at_exit_a_running_jvm_has_its_gateway_shut_down_and_an_ended_one_is_left_alone():
    running, ended = StandInGateway(exit_code=None), StandInGateway(exit_code=0)
    shut_down_gateway(session_of(running))
    shut_down_gateway(session_of(ended))
    assert (running.shut_down, ended.shut_down) == (1, 0)
