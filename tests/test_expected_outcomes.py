"""properties/expected.py: a registered violation is a strict expected failure exactly where its configuration
violates the invariant, so both a fixed model and a lost detection fail the run."""

import pytest

from model.values.config import Config
from properties.expected import expect_violation

TEST_FILE = """
from model.values.config import Config
from properties.expected import expect_violation

def check():
    assert {holds}, "invariant violated"

test_it = expect_violation(check, "apache/rocketmq#6163", "the claim",
                           when=lambda config: config.is_orderly, config=Config(consume_mode="{mode}"))
"""


@pytest.mark.parametrize(
    "mode, holds, outcome",
    [
        ("orderly", False, {"xfailed": 1}),  # violated where expected
        ("orderly", True, {"failed": 1}),  # model fixed or detection lost: XPASS(strict)
        ("concurrently", True, {"passed": 1}),  # other configurations must pass
        ("concurrently", False, {"failed": 1}),  # and really fail when they do not
    ],
)
def test_expected_violation_is_strict_and_keyed_by_configuration(pytester, mode, holds, outcome):
    pytester.makepyfile(test_machine=TEST_FILE.format(holds=holds, mode=mode))
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist").assert_outcomes(**outcome)


def test_the_reason_names_the_upstream_issue():
    def check():
        pass

    marked = expect_violation(check, "apache/rocketmq#6163", "claim", when=bool, config=Config())
    (marker,) = marked.pytestmark
    assert marker.kwargs["strict"] and "apache/rocketmq#6163" in marker.kwargs["reason"]
