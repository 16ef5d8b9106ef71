"""The proxy's table of gRPC clients (GrpcClientSettingsManager's CLIENT_SETTINGS_MAP, spec/16-proxy.md): the
settings each client id last sent on its telemetry stream. Only the proxy's memory holds it, so a restarted proxy
starts with none, and a consumer is served again only once it sends its settings again (spec/13-clients.md)."""

from __future__ import annotations

import immutables
from attrs import field, frozen

from model.values.message import java_string_hash
from model.values.records import evolve

CLIENT_TYPES = ("PRODUCER", "PUSH_CONSUMER", "SIMPLE_CONSUMER")


@frozen
class ClientSettings:
    """What a client's Settings tell the proxy: its type and, for a consumer, its group."""

    client_type: str
    group: str | None = None


@frozen
class ProxyClients:
    """The settings per client id."""

    settings: immutables.Map = field(factory=immutables.Map)


def on_client_settings(clients: ProxyClients, client_id: str, settings: ClientSettings) -> ProxyClients:
    """[RP-03] processClientSettings: the settings a client sends replace its earlier ones (the proxy answers the
    group's retry settings, compute_consumer_settings)."""
    return evolve(clients, settings=clients.settings.set(client_id, settings))


def get_client_settings(clients: ProxyClients, client_id: str) -> ClientSettings | None:
    return clients.settings.get(client_id)


def compute_heartbeat_code(clients: ProxyClients, client_id: str) -> str:
    """[RP-03] ClientActivity.heartbeat: OK for a client whose settings the proxy holds (of a known type),
    UNRECOGNIZED_CLIENT_TYPE ("cannot find client settings for this client") otherwise."""
    settings = clients.settings.get(client_id)
    return "OK" if settings is not None and settings.client_type in CLIENT_TYPES else "UNRECOGNIZED_CLIENT_TYPE"


def compute_receive_code(clients: ProxyClients, client_id: str) -> str | None:
    """[RP-03] ReceiveMessageActivity reads the client's settings first (FIFO, maxAttempts): without them the
    receive fails with INTERNAL_SERVER_ERROR (a NullPointerException) before the broker is asked; None: it may
    go on."""
    return None if client_id in clients.settings else "INTERNAL_SERVER_ERROR"


def on_client_termination(clients: ProxyClients, client_id: str) -> tuple[ProxyClients, str]:
    """[RP-03] notifyClientTermination: the client's settings removed; UNRECOGNIZED_CLIENT_TYPE where there were
    none, else OK."""
    if client_id not in clients.settings:
        return clients, "UNRECOGNIZED_CLIENT_TYPE"
    return evolve(clients, settings=clients.settings.delete(client_id)), "OK"


def on_proxy_restart(clients: ProxyClients) -> ProxyClients:
    """[RP-03] A restarted proxy process holds no client's settings."""
    return ProxyClients()


def compute_send_queue(message_group: str | None, queue_count: int, sent: int) -> int:
    """The queue a gRPC send writes to: a message group's messages all to one queue, the bucket Guava's consistent
    hash gives the group's String.hashCode (SendMessageQueueSelector); others round robin by the sends so far."""
    if not message_group:
        return sent % queue_count
    return compute_consistent_hash(java_string_hash(message_group), queue_count)


def compute_consistent_hash(key: int, buckets: int) -> int:
    """Guava's Hashing.consistentHash(long, int): a walk driven by a 64-bit linear congruential generator seeded
    with the key, which jumps to ever higher buckets until the next jump leaves the range."""
    state, candidate = key & _MASK_64, 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _MASK_64
        jump = int((candidate + 1) / (((state >> 33) + 1) / 2**31))
        if jump >= buckets:
            return candidate
        candidate = jump


_MASK_64 = (1 << 64) - 1
_LCG_MULTIPLIER = 2862933555777941757


def compute_proxy_assignment(queue_count: int, readable: bool, fifo: bool) -> tuple[str, tuple[int, ...]]:
    """RouteActivity.queryAssignment, what a gRPC PushConsumer reads: FORBIDDEN without a readable queue; else one
    assignment of queue -1 (each receive pops every queue), or for an orderly group one per queue (each queue
    received on its own, so an orderly pop blocks only its queue, FF-01)."""
    if not readable or queue_count <= 0:
        return "FORBIDDEN", ()
    return "OK", tuple(range(queue_count)) if fifo else (-1,)
