"""The adapter runner against a scripted fake adapter (a few lines of Python speaking protocol 1)."""

import sys
import time

import pytest

from conformance.runner.clients.adapter import AdapterError, AdapterProcess

pytestmark = [pytest.mark.timeout(60), pytest.mark.conformance]
FAKE = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    sys.stderr.write("x" * 10000 + "\n")
    if message["type"] == "start":
        print(json.dumps({"type": "ready", "protocol": 1, "client": {"name": "fake", "version": "0"}}), flush=True)
        print(json.dumps({"type": "delivery", "delivery": 1, "messages": []}), flush=True)
    elif message["type"] == "outcome":
        print(json.dumps({"type": "echo", "status": message["status"]}), flush=True)
    elif message["type"] == "stop":
        print(json.dumps({"type": "stopped"}), flush=True)
        break
"""


def test_session_start_outcome_stop():
    with AdapterProcess([sys.executable, "-c", FAKE]) as adapter:
        ready = adapter.start(namesrv="127.0.0.1:1", group="G", topic="T", instance="i", mode="concurrently",
                              model="clustering", config={})
        assert ready["client"] == {"name": "fake", "version": "0"}
        assert adapter.receive(5)["delivery"] == 1
        adapter.send({"type": "outcome", "delivery": 1, "status": "RECONSUME_LATER"})
        assert adapter.receive(5) == {"type": "echo", "status": "RECONSUME_LATER"}
        adapter.stop()
        time.sleep(0.2)
        assert len(adapter.stderr) <= 64 * 1024 + 10001
    assert adapter.process.poll() is not None


def test_silent_adapter_times_out_and_is_killed():
    with AdapterProcess([sys.executable, "-c", "import time; time.sleep(60)"]) as adapter:
        with pytest.raises(AdapterError, match="within 0.3 s"):
            adapter.receive(0.3)
    assert adapter.process.returncode is not None


def test_exited_adapter_is_reported():
    with AdapterProcess([sys.executable, "-c", "import sys; sys.stderr.write('boom')"]) as adapter:
        with pytest.raises(AdapterError, match="boom"):
            adapter.receive(10)
