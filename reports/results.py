"""What the aggregate found, as plain Python values for the renderers (Markdown, HTML, PNG)."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

from reportformat.escape import to_terminal
from reports.spec_rules import Rule, slugify

GAP, PARTIAL, EXERCISED, FAILING = "gap", "partial", "exercised", "failing"
# Each word of a replay command is shown whole up to this length (a real one is far shorter), nothing hidden in it.
REPLAY_LIMIT = 500
# Words, not emoji: Debian's headless chromium (and many terminals) drew the emoji as empty boxes.
STATUS_MARK = {GAP: "gap", PARTIAL: "partial", EXERCISED: "exercised", FAILING: "failing"}


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
    runs_covered: dict = field(default_factory=dict)
    ingested: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # The rule x client matrix (reports/clients.py): one row per client (the model included) and rule.
    client_matrix: list[dict] = field(default_factory=list)
    differential_run: Path | None = None  # the newest run read with differential records (reports/differential.py)

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

    def get_headline(self) -> dict:
        """The figures the summary and the HTML page start with."""
        totals = {rule.rule_id: self.get_rule_totals(rule.rule_id) for rule in self.rules}
        covered = self.runs_covered or {}
        return {
            "exercised": sum(1 for t in totals.values() if t["test_cases"]),
            "rules": len(self.rules),
            "gaps": [rule_id for rule_id, t in totals.items() if t["status"] == GAP],
            "failing": [rule_id for rule_id, t in totals.items() if t["status"] == FAILING],
            "unexpected_failures": count_tests(self.unexpected_failures),
            "expected_refutations": len(self.expected_failures),
            "quarantined": sum(self.quarantine_by_reason.values()),
            "seconds": sum(row["seconds"] for row in self.machine_cost),
            "runs": covered.get("runs", 0),
            "first_started_at": covered.get("first_started_at"),
            "last_started_at": covered.get("last_started_at"),
            "interrupted_runs": covered.get("interrupted_runs") or [],
        }

    def to_json(self) -> str:
        """The results as JSON (results.json beside the summary), for the documentation site's build step."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        values["rules"] = [asdict(rule) for rule in self.rules]
        values["cited_by_tests"] = sorted(self.cited_by_tests)
        return json.dumps(values, default=str)

    @classmethod
    def from_json(cls, text: str) -> Results:
        values = json.loads(text)
        values["rules"] = [Rule(**rule) for rule in values["rules"]]
        values["cited_by_tests"] = set(values["cited_by_tests"])
        return cls(**values)

    @property
    def unexpected_failures(self) -> list[tuple[int, dict]]:
        """(place in `failures`, row) of each unexpected failure, newest first."""
        return [(at, row) for at, row in enumerate(self.failures) if not row["expected_violation"]]

    @property
    def expected_failures(self) -> list[tuple[int, dict]]:
        return [(at, row) for at, row in enumerate(self.failures) if row["expected_violation"]]


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``0 gaps``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def count_tests(failures: list[tuple[int, dict]]) -> int:
    """Failed tests as pytest counts them: a test (in one run and configuration) whose Hypothesis failure shrank to
    several distinct counterexamples is one failed test."""
    return len({(row["run_id"], row["configuration"], row["nodeid"]) for _, row in failures})


def get_rule_anchor(rule_id: str) -> str:
    """The anchor of a rule's row in the coverage page and HTML report (``#sb-04``)."""
    return rule_id.lower()


def get_heading_anchor(rule: Rule) -> str:
    """GitHub's anchor of the rule's heading in its spec chapter (the documentation site's too)."""
    return slugify(f"{rule.rule_id} {rule.title}")


def get_replay_command(row: dict) -> str:
    """The shell command that replays a failure from the repository's root: the run's seed, Hypothesis profile and
    configuration, and the test."""
    names = ("RMQSPEC_VERSION", "RMQSPEC_MESSAGE_MODEL", "RMQSPEC_CONSUME_MODE", "RMQSPEC_RETRY_PRESET")
    values = row["configuration"].split("/")
    settings = {"RMQSPEC_HYPOTHESIS_SEED": row["seed"], "RMQSPEC_HYPOTHESIS_PROFILE": row.get("hypothesis_profile")}
    if len(values) == len(names):
        settings |= dict(zip(names, values, strict=True))
    words = [f"{name}={shlex.quote(to_terminal(value, REPLAY_LIMIT))}" for name, value in settings.items() if value]
    test = shlex.quote(to_terminal(row["nodeid"], REPLAY_LIMIT))
    return " ".join(words) + f" python -m pytest -p no:cacheprovider {test}"


def get_failure_anchor(index: int) -> str:
    """The anchor of a failure in the HTML report (its place in Results.failures)."""
    return f"failure-{index + 1}"
