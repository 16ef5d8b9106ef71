"""The planted-bug catalogue (benchmarks/mutants.toml) stays plantable: each bug's `old` text occurs exactly once in
its file, and `new` differs from it, so a refactoring of model/ cannot silently turn a mutant into a no-op."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = tomllib.loads((ROOT / "benchmarks" / "mutants.toml").read_text())["mutant"]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m["id"])
def test_each_mutant_plants_exactly_one_change(mutant):
    text = (ROOT / mutant["file"]).read_text()
    assert text.count(mutant["old"]) == 1, f"{mutant['id']}: `old` occurs {text.count(mutant['old'])} times"
    assert mutant["new"] != mutant["old"]


def test_mutant_ids_are_unique():
    ids = [m["id"] for m in MUTANTS]
    assert len(ids) == len(set(ids))
