"""benchmarks/mutation_scores.py reads mutmut's results listing into per-module counts and a score that leaves
unreached and unchecked mutants out of the denominator."""

from benchmarks.mutation_scores import compute_score, format_table, parse_results

LISTING = """\
    model.broker.locks.x_is_lock_expired__mutmut_1: killed
    model.broker.locks.x_is_lock_expired__mutmut_2: survived
    model.broker.locks.xǁLockTableǁget_owner__mutmut_1: timeout
    model.broker.locks.xǁLockTableǁget_owner__mutmut_2: killed
    model.broker.store.x_get_min_offset_in_queue__mutmut_1: no tests
    model.broker.store.x_get_min_offset_in_queue__mutmut_2: not checked
    model.broker.store.x_get_min_offset_in_queue__mutmut_3: suspicious
a line that is not a result
"""


def test_counts_per_module_and_survivor_names():
    counts, survivors = parse_results(LISTING)
    assert counts["model.broker.locks"] == {"killed": 2, "survived": 1, "timeout": 1}
    assert counts["model.broker.store"] == {"no tests": 1, "not checked": 1, "other": 1}
    assert survivors == ["model.broker.locks.x_is_lock_expired__mutmut_2"]


def test_the_score_counts_only_checked_mutants():
    counts, _ = parse_results(LISTING)
    assert compute_score(counts["model.broker.locks"]) == "75 %"  # 3 of 4 checked
    assert compute_score(counts["model.broker.store"]) == "-"  # none checked
    table = format_table(counts)
    assert "| model.broker.locks | 4 | 2 | 1 | 1 | 0 | 0 | 0 | 75 % |" in table
    assert table.splitlines()[-1] == "| **all** | 7 | 2 | 1 | 1 | 1 | 1 | 1 | 75 % |"
