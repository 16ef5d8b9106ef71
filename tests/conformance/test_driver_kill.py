"""AdapterConsumer.kill (conformance/runner/clients/driver.py) against a fake adapter process: SIGKILL reaches the
whole process group at once, even a stopped process, never hangs, and what the dead adapter's pipes do afterwards
is no error of the client."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from conformance.runner.clients.driver import KILL_WAIT_S, AdapterConsumer, StartRequest

pytestmark = pytest.mark.timeout(30)

# Answers `start` with `ready`, starts a child in its process group, delivers one message and never reads again.
FAKE = r"""
import json, subprocess, sys, time
sys.stdin.readline()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(json.dumps({"type": "ready", "protocol": 1, "client": {"name": "fake", "version": str(child.pid)}}), flush=True)
message = {"msgId": "m0", "topic": "T", "queueId": 0, "queueOffset": 0, "commitLogOffset": 0, "reconsumeTimes": 0,
           "properties": {"UNIQ_KEY": "m0"}}
print(json.dumps({"type": "delivery", "delivery": 1, "thread": "t", "messages": [message]}), flush=True)
time.sleep(60)
"""


class FakeAdapterConsumer(AdapterConsumer):
    client_name = "fake"
    ready_timeout_s = 10.0

    def get_argv(self) -> list[str]:
        return [sys.executable, "-c", FAKE]


def is_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("stopped", [False, True])
def test_a_kill_ends_the_process_group_at_once_and_marks_the_consumer_dead(stopped):
    consumer = FakeAdapterConsumer(StartRequest("127.0.0.1:1", "G", "T", "i"), lambda message, seen: "RECONSUME_LATER")
    consumer.start()
    child = int(consumer.client["version"])
    assert consumer.wait_for(lambda found: len(found) == 1, 5.0)
    if stopped:
        os.kill(consumer.process.pid, signal.SIGSTOP)
    began = time.monotonic()
    consumer.kill()
    assert time.monotonic() - began < KILL_WAIT_S
    assert consumer.dead and consumer.process.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5.0
    while is_alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_alive(child)
    consumer.send({"type": "outcome", "delivery": 1, "status": "CONSUME_SUCCESS"})  # into a closed pipe
    consumer.stop()  # at once: the process is gone
    consumer.kill()  # twice is harmless
    assert consumer.errors == [] and consumer.stopped.is_set()
    assert [d.uniq_key for d in consumer.deliveries] == ["m0"]
