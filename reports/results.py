"""What the aggregate found, as plain Python values for the renderers (Markdown, HTML, PNG)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from reports.spec_rules import Rule

GAP, PARTIAL, EXERCISED, FAILING = "gap", "partial", "exercised", "failing"
STATUS_MARK = {GAP: "❌ gap", PARTIAL: "◐ partial", EXERCISED: "✅ exercised", FAILING: "⚠️ failing"}


def get_configurations(coverage: list[dict]) -> list[str]:
    return sorted({row["configuration"] for row in coverage})


def index_cells(coverage: list[dict]) -> dict[tuple[str, str], dict]:
    """(rule id, configuration) -> its coverage row."""
    return {(row["rule_id"], row["configuration"]): row for row in coverage}


@dataclass
class Results:
    rules: list[Rule]
    coverage: list[dict]
    failures: list[dict]
    machine_cost: list[dict]
    rule_cost: list[dict]
    trend: list[dict]
    unknown_rules: list[str]
    quarantine: list[dict]
    quarantine_by_reason: dict[str, int]
    cited_by_tests: set[str] = field(default_factory=set)
    ingested: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def configurations(self) -> list[str]:
        return get_configurations(self.coverage)

    def get_cell(self, rule_id: str, configuration: str) -> dict | None:
        return self._cells.get((rule_id, configuration))

    @property
    def _cells(self) -> dict[tuple[str, str], dict]:
        if not hasattr(self, "_cell_index"):
            self._cell_index = index_cells(self.coverage)
        return self._cell_index

    def get_rule_totals(self, rule_id: str) -> dict:
        rows = [row for row in self.coverage if row["rule_id"] == rule_id]
        covered = sum(1 for row in rows if row["test_cases"])
        failures = sum(row["failures"] for row in rows)
        status = FAILING if failures else GAP if not covered else PARTIAL if covered < len(rows) else EXERCISED
        return {
            "test_cases": sum(row["test_cases"] for row in rows),
            "steps": sum(row["steps"] for row in rows),
            "runs": max((row["runs"] for row in rows), default=0),
            "configurations": covered,
            "of": len(rows),
            "failures": failures,
            "expected_failures": sum(row["expected_failures"] for row in rows),
            "status": status,
        }

    @property
    def unexpected_failures(self) -> list[dict]:
        return [row for row in self.failures if not row["expected_violation"]]

    @property
    def expected_failures(self) -> list[dict]:
        return [row for row in self.failures if row["expected_violation"]]


def get_rule_anchor(rule_id: str) -> str:
    """The anchor of a rule's row in the coverage page and HTML report (``#sb-04``)."""
    return rule_id.lower()


def get_heading_anchor(rule: Rule) -> str:
    """GitHub's anchor of the rule's heading in its spec chapter."""
    text = re.sub(r"[^\w\- ]", "", f"{rule.rule_id} {rule.title}".lower())
    return text.replace(" ", "-")
