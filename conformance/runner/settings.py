"""The broker settings table both backends apply (the model as Config, a real broker through broker.conf).

`message_delay_level` uses RocketMQ's own syntax: whole numbers with a unit s, m, h or d. RocketMQ has no
millisecond unit and neither has the model's parser (model.values.delay_levels.parse_delay_level), so the compressed
table for tests is one second per level (COMPRESSED_DELAY_LEVEL), not 100 ms.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

COMPRESSED_DELAY_LEVEL = " ".join(["1s"] * 18)
PERM_READ_WRITE = 6


@attrs.frozen
class BrokerSettings:
    message_delay_level: str = COMPRESSED_DELAY_LEVEL
    retry_max_times: int = 16
    retry_queue_nums: int = 1
    broker_perm: int = PERM_READ_WRITE
    topic_queue_nums: int = 4
    broker_name: str = "broker-a"
    cluster_name: str = "DefaultCluster"
    # Consumer groups whose subscription config and %RETRY% topic exist from the start, as after a first heartbeat:
    # a client asks for the retry topic's route before its first heartbeat and refreshes routes only every 30 s.
    groups: tuple[str, ...] = ()
    # The RocketMQ release the model-backed broker behaves as (model/values/profiles.py); "5.3.3" also gives it the
    # POP requests and the proxy's gRPC service (conformance/runner/server/pop_adapter.py).
    profile: str = "4.9.8"
    # The 5.x proxy's ProxyConfig keys a test session may lower (RocketMQ's defaults here): the shortest invisible
    # duration a receive may ask for, and the long polling a receive that finds nothing is held for, at least and at
    # most (the longest is also what the settings a consumer gets name).
    proxy_min_invisible_ms: int = 10_000
    proxy_min_long_polling_ms: int = 5_000
    proxy_max_long_polling_ms: int = 20_000
    # The broker's defaultMessageRequestMode (PULL or POP): how a client with client rebalance off is told to read.
    message_request_mode: str = "PULL"


@attrs.define
class Faults:
    """Fault switches the harness flips while a run is going (read by the server at each request)."""

    send_back_error: bool = False  # CONSUMER_SEND_MSG_BACK answered SYSTEM_ERROR
    send_back_silent: bool = False  # CONSUMER_SEND_MSG_BACK never answered (the client times out)
    pull_error: bool = False  # PULL_MESSAGE answered SYSTEM_ERROR
    # A workload's own faults, request by request: called with the server and the request, it returns the fault
    # kind for that request (conformance/history/workload.py's FAULT_KINDS) or None.
    script: Callable | None = None

    def get_kind(self, server, request) -> str | None:
        return None if self.script is None else self.script(server, request)
