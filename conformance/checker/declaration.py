"""A declared deviation of a real client from one rule (conformance/checker/deviations.py, deviations_go.py,
deviations5.py hold them), the form every client's declarations share."""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from conformance.checker.causes import Cause


@frozen
class Deviation:
    """A client's declared deviation from one rule: what it does instead (claim), the client source that explains
    it, the causes — mechanisms read from a run's history, conformance/checker/causes.py — that explain each message
    it covers (nothing else), `when` the runs in which it must show (None: it need not), and for one that need not,
    how often it showed (`frequency`, measured by benchmarks/bench_declarations.py)."""

    rule: str
    client: tuple[str, str]
    claim: str
    source: str
    when: Callable | None = None
    causes: tuple[Cause, ...] = ()
    frequency: str = ""
