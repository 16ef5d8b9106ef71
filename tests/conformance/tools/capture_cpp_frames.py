"""Capture real request frames of rocketmq-client-cpp (PyPI `rocketmq` 0.4.4) against the model-backed server.

Run by hand: `.venv/bin/python tests/conformance/tools/capture_cpp_frames.py` rewrites
tests/conformance/fixtures/cpp-*.hex with the first frame of each request code the client sent: the client's own bytes
as read from the socket, not a re-encoding.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

from conformance.codec.codes import RequestCode
from conformance.runner.server.runner import run_server
from conformance.runner.settings import BrokerSettings

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"
CLIENT = r"""
import sys, time
from rocketmq.client import Producer, PushConsumer, Message
from rocketmq.ffi import dll, MSG_CALLBACK_FUNC
namesrv = sys.argv[1]
producer = Producer("PG")
producer.set_namesrv_addr(namesrv)
producer.start()
message = Message("T")
message.set_keys("k1"); message.set_tags("a"); message.set_body("hello")
print(producer.send_sync(message), flush=True)
calls = []
def listener(_consumer, msg):
    calls.append(dll.GetMessageReconsumeTimes(msg))
    print("delivery", dll.GetMessageId(msg), calls[-1], flush=True)
    return 1 if len(calls) == 1 else 0  # RECONSUME_LATER once, then CONSUME_SUCCESS
consumer = PushConsumer("G")
consumer.set_namesrv_addr(namesrv)
callback = MSG_CALLBACK_FUNC(listener)
dll.Subscribe(consumer._handle, b"T", b"*")
dll.RegisterMessageCallback(consumer._handle, callback)
consumer.start()
time.sleep(float(sys.argv[2]))
"""


def main(seconds: float = 9.0) -> None:
    with run_server(BrokerSettings(groups=("G",))) as runner:
        process = subprocess.Popen([sys.executable, "-c", CLIENT, runner.server.namesrv_addr, str(seconds)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output, _ = process.communicate(timeout=seconds + 20)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate(timeout=10)
        time.sleep(0.1)
        raw = runner.call(lambda: [(e.command.code, e.raw) for e in runner.server.trace if e.raw])
        print("findings:", runner.server.findings)
        print("codes:", [(e.at, e.direction, e.command.code) for e in runner.server.trace])
    print(output[-2000:])
    seen = {}
    for code, frame in raw:
        seen.setdefault(code, frame)
    for code, frame in sorted(seen.items()):
        name = RequestCode(code).name if code in RequestCode._value2member_map_ else str(code)
        (FIXTURES / f"cpp-{name.lower()}.hex").write_text(frame.hex() + "\n")
        print(name, len(frame))


if __name__ == "__main__":
    main()
