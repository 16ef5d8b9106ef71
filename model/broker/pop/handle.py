"""A popped message's handle, as the broker writes it into POP_CK: the value itself is the wire's
(model/values/pop_wire.py), which a client sends back; this name stays for the harness's imports."""

from __future__ import annotations

from model.values.pop_wire import Handle, decode_handle

__all__ = ["Handle", "decode_handle"]
