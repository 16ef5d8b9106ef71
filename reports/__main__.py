"""The main job: run the property suite over the suite configuration and print which spec rules it exercised.

    python -m reports

(The reports issue grows this into: suite with per-worker report files, then the Spark aggregate.)
"""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from hypothesis.internal.observability import add_observability_callback

from reports.spec_rules import RULE_ID, get_spec_rules


def main() -> int:
    hits: Counter[str] = Counter()

    def record(observation) -> None:
        if getattr(observation, "type", None) == "test_case":
            hits.update(key for key in observation.features if RULE_ID.fullmatch(key))

    add_observability_callback(record)
    code = pytest.main(["-q", "properties"])
    rules = get_spec_rules()
    print(f"\nspec rules exercised by the property suite: {sum(1 for r in rules if hits[r.rule_id])}/{len(rules)}")
    for rule in rules:
        print(f"  {rule.rule_id:8} {hits[rule.rule_id]:6d} test cases  {rule.title}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
