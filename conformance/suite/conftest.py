"""The full run ends with its rule x client matrix: per client, how many rules conform, deviate, are not applicable
or not judged (conformance/checker/rules.py says why), and which deviate."""

from __future__ import annotations

from collections import Counter

from conformance.report import FINDINGS, SESSION, format_matrix


def pytest_terminal_summary(terminalreporter):
    if SESSION:
        terminalreporter.section("rule x client")
        for line in format_matrix(SESSION):
            terminalreporter.write_line(line)
        for (client, kind, code), count in sorted(Counter(FINDINGS).items(), key=str):
            terminalreporter.write_line(f"{client}: {count} x {kind}" + (f" (request code {code})" if code else ""))
