"""Expected outcomes per configuration: where a RocketMQ release violates an invariant on purpose (a known upstream
bug the model reproduces), the test is a strict expected failure in exactly the configurations that violate it.

One line in the machine's module does it, e.g. for the 5.0.0 orderly retry bound (apache/rocketmq#6163)::

    TestOrderlyConsumer = expect_violation(OrderlyConsumer.TestCase, "apache/rocketmq#6163",
        "orderly DLQ send carries RECONSUME_TIME r, not r + 1",
        when=lambda config: config.is_orderly and not config.profile.orderly_send_reconsume_time_plus_one)

Strict means both changes show up: if the model is fixed (or the detection is lost) the test XPASSes and fails;
in every other configuration the same test must pass. The reason (with the upstream issue) lands in the run report
as ``expected_violation``, so the aggregate separates expected failures from real ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from model.values.config import Config
from properties.suite import get_suite_config

T = TypeVar("T")

# (test name, upstream issue, claim, violated in the current configuration) for every registered expectation.
REGISTERED: list[tuple[str, str, str, bool]] = []


def expect_violation(
    test: T,
    upstream: str,
    claim: str,
    *,
    when: Callable[[Config], bool],
    config: Config | None = None,
    raises: type[BaseException] | tuple[type[BaseException], ...] = AssertionError,
) -> T:
    """`test` (a test function or a machine's TestCase) must fail with `raises` iff `when(config)` holds."""
    violated = bool(when(get_suite_config() if config is None else config))
    REGISTERED.append((getattr(test, "__name__", repr(test)), upstream, claim, violated))
    marker = pytest.mark.xfail(condition=violated, reason=f"{upstream}: {claim}", strict=True, raises=raises)
    return marker(test)
