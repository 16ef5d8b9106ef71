"""A network namespace that has only loopback, for the real broker and everything that talks to it.

RocketMQ 4.9.8 listens on every interface. The harness therefore never starts it unless the current process is in
a network namespace whose only interface is ``lo`` (:func:`require_loopback_only`), and the tox env runs the whole
pytest session inside such a namespace with::

    python -m conformance.runner.backends.loopback COMMAND [ARG ...]

which re-executes COMMAND under ``unshare --net`` with ``lo`` brought up (root, or a user namespace, is needed).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys

NAMESPACE_SCRIPT = 'ip link set lo up && exec "$@"'


class NotLoopbackOnly(RuntimeError):
    """The process is in a network namespace with interfaces other than loopback."""


def get_interfaces() -> list[str]:
    """The names of the network interfaces of the calling thread's network namespace."""
    return sorted(name for _, name in socket.if_nameindex())


def is_loopback_only() -> bool:
    """True when the only network interface of this namespace is ``lo``."""
    return get_interfaces() == ["lo"]


def require_loopback_only() -> None:
    """Refuses (NotLoopbackOnly) to go on in a namespace that reaches anything beyond loopback."""
    if not is_loopback_only():
        raise NotLoopbackOnly(
            f"the real broker runs only in a loopback-only network namespace; this one has {get_interfaces()}: "
            "run the session through `python -m conformance.runner.backends.loopback python -m pytest ...`"
        )


def get_namespace_command(command: list[str]) -> list[str]:
    """The argv that runs `command` in a new network namespace whose only interface, ``lo``, is up."""
    unshare = shutil.which("unshare") or "unshare"
    return [unshare, "--net", "bash", "-c", NAMESPACE_SCRIPT, "loopback", *command]


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m conformance.runner.backends.loopback COMMAND [ARG ...]")
    if is_loopback_only():  # already inside one: run the command as it is
        os.execvp(argv[0], argv)
    ns_command = get_namespace_command(argv)
    os.execvp(ns_command[0], ns_command)


if __name__ == "__main__":
    main(sys.argv[1:])
