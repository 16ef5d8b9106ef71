"""A topic's route as a name server answers it (GET_ROUTEINFO_BY_TOPIC), read by the harness to see a fault take
effect: the broker's permission in the route (brokerPermission, as the broker last registered it), or no route at
all (the broker killed, or not registered yet with a name server that restarted)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from conformance.codec.codes import GET_ROUTEINFO_BY_TOPIC, ResponseCode
from conformance.runner.backends.remoting_client import RemotingClient

POLL_S = 0.05
# fastjson writes the route's queue data as {"brokerName":...,"perm":6,...}; its map keys are bare, so no JSON parser.
PERM = re.compile(rb'"perm":(\d+)')


def get_route_perms(namesrv_addr: str, topic: str, timeout: float = 5.0) -> list[int] | None:
    """The perm of each queue datum of `topic`'s route, None when the name server has no route for it; OSError when
    the name server cannot be reached."""
    with RemotingClient(namesrv_addr, timeout) as client:
        response = client.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if response.code != ResponseCode.SUCCESS:
        return None
    return [int(perm) for perm in PERM.findall(response.body)]


def wait_for_route(namesrv_addr: str, topic: str, wanted: Callable[[list[int] | None], bool],
                   limit_s: float = 10.0) -> list[int] | None:
    """Poll `topic`'s route until `wanted(perms)` (an unreachable name server counts as no route); TimeoutError after
    `limit_s`. Returns the route's perms."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            perms = get_route_perms(namesrv_addr, topic)
        except OSError:
            perms = None
        if wanted(perms):
            return perms
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the route of {topic} at {namesrv_addr} is still {perms} after {limit_s} s")
        time.sleep(POLL_S)
