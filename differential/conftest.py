"""The differential suite runs in a loopback-only network namespace (tox env ``differential-broker``)."""

pytest_plugins = ("conformance.backends.fixtures",)
