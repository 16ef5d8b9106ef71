"""benchmarks/mutation_scores.py reads mutmut's results listing into per-module counts and a score that leaves
unreached and unchecked mutants out of the denominator."""

import json
import runpy
import sys
from pathlib import Path

from hypothesis import Phase, settings

from benchmarks import mutation_scores
from benchmarks.mutation_scores import (
    compute_interval,
    compute_score,
    count_by_package,
    count_statuses,
    draw_sample,
    format_table,
    get_cheapest_kill,
    get_cheapest_mutant,
    list_mutants,
    parse_results,
    run_mutmut,
)

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


def test_a_sample_takes_k_per_module_or_all_of_a_smaller_one_and_the_same_seed_draws_the_same_mutants():
    mutants = {"big": {f"big.x_f__mutmut_{n}": "killed" for n in range(50)}, "small": {"small.x_g__mutmut_1": "killed"}}
    sample = draw_sample(mutants, 5, seed=0)
    assert len(sample["big"]) == 5 and sample["small"] == mutants["small"]
    assert set(sample["big"]) <= set(mutants["big"])
    assert draw_sample(mutants, 5, seed=0) == sample
    assert any(draw_sample(mutants, 5, seed=seed)["big"] != sample["big"] for seed in range(1, 4))


def test_the_wilson_interval_brackets_the_rate_and_narrows_with_more_mutants():
    assert compute_interval(20, 20)[1] == 1.0 and 0.83 < compute_interval(20, 20)[0] < 0.84
    low, high = compute_interval(15, 20)
    assert 0.53 < low < 0.54 and 0.88 < high < 0.89
    assert compute_interval(150, 200)[1] - compute_interval(150, 200)[0] < high - low


def test_a_sample_table_weights_each_module_by_its_size():
    """locks: 3 of 4 checked killed (size 100); store: 1 of 1 (size 300): (100 x 0.75 + 300 x 1) / 400 = 94 %."""
    mutants = list_mutants(LISTING)
    mutants["model.broker.store"]["model.broker.store.x_get_min_offset_in_queue__mutmut_2"] = "killed"
    counts, _ = count_statuses(mutants)
    table = format_table(counts, {"model.broker.locks": 100, "model.broker.store": 300})
    assert "| 75 % | 100 | 30-95 % |" in table.splitlines()[2]
    assert table.splitlines()[-1].endswith("| 400 | estimated 94 % (modules weighted by size) |")


def test_a_package_counts_its_modules_and_subpackages():
    counts, _ = parse_results(LISTING + "    model.broker.pop.ack.x_f__mutmut_1: killed\n"
                                        "    model.client.pull.x_g__mutmut_1: survived\n")
    packages = count_by_package(counts)
    assert packages["model.broker"] == {"killed": 3, "survived": 1, "timeout": 1, "no tests": 1, "not checked": 1,
                                        "other": 1}
    assert packages["model.client"] == {"survived": 1}


def test_a_mutmut_run_past_the_budget_is_interrupted_and_keeps_its_verdicts(tmp_path, monkeypatch):
    """--all: mutmut still running when the budget is spent gets SIGINT (it then stops its children and keeps the
    verdicts it has), not a kill; a run that ends in time gives its exit code."""
    fake = tmp_path / "mutmut"
    fake.write_text(f"""#!{sys.executable}
import signal, sys, time
def stop(*_):
    open({str(tmp_path / "stopped")!r}, "w").write(" ".join(sys.argv[1:]))
    sys.exit(1)
signal.signal(signal.SIGINT, stop)
time.sleep(float(sys.argv[-1]))
sys.exit(3)
""")
    fake.chmod(0o755)
    monkeypatch.setattr(mutation_scores, "get_mutmut", lambda: str(fake))
    assert run_mutmut(["30"], 2, 1.0) is None
    assert (tmp_path / "stopped").read_text() == "run --max-children 2 30"
    assert run_mutmut(["0"], 2, 30.0) == 3


def test_the_mutation_profile_is_fast_without_shrinking():
    """conftest.py's `mutation` profile (tox env `mutation`) draws what `fast` draws and stops at the first failure."""
    fast, mutation = settings.get_profile("fast"), settings.get_profile("mutation")
    assert Phase.shrink in fast.phases and Phase.shrink not in mutation.phases
    assert {Phase.explicit, Phase.reuse, Phase.generate} <= set(mutation.phases)
    assert (mutation.max_examples, mutation.stateful_step_count) == (fast.max_examples, fast.stateful_step_count)
    assert not mutation.report_multiple_bugs


def test_the_stats_refresh_reruns_the_kill_whose_tests_are_quickest(tmp_path):
    """mutation_recheck's refresh runs mutmut on one killed mutant: the one whose function's tests took least."""
    meta = tmp_path / "mutants" / "model" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_f__mutmut_1": 1, "m.x_g__mutmut_1": 1,
                                                     "m.x_h__mutmut_1": 0}}))
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps({
        "duration_by_test": {"t.py::a": 2.0, "t.py::b": 0.5, "t.py::c": 0.1},
        "tests_by_mangled_function_name": {"m.x_f": ["t.py::a"], "m.x_g": ["t.py::b", "t.py::b"],
                                           "m.x_h": ["t.py::c"]}}))
    assert get_cheapest_kill(tmp_path) == "m.x_g__mutmut_1"  # h's tests are quicker, but h survived
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_h__mutmut_1": 0}}))
    assert get_cheapest_kill(tmp_path) is None


def test_a_new_mutants_folder_refreshes_the_stats_on_its_quickest_unchecked_mutant(tmp_path):
    """In a new mutants/ nothing is killed yet: the refresh (and with it the traced line map) must not be skipped, so
    it runs the unchecked mutant whose tests are quickest, never a survivor."""
    meta = tmp_path / "mutants" / "model" / "m.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_f__mutmut_1": None, "m.x_g__mutmut_1": None,
                                                     "m.x_h__mutmut_1": 0}}))
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps({
        "duration_by_test": {"t.py::a": 2.0, "t.py::b": 0.5, "t.py::c": 0.1},
        "tests_by_mangled_function_name": {"m.x_f": ["t.py::a"], "m.x_g": ["t.py::b"], "m.x_h": ["t.py::c"]}}))
    assert get_cheapest_mutant(tmp_path, 1) is None
    assert get_cheapest_mutant(tmp_path, None) == "m.x_g__mutmut_1"


def test_the_profiles_do_not_inherit_the_profile_loaded_when_conftest_runs_again():
    """mutmut runs pytest twice in one process (its stats, then the clean run), so conftest.py registers its profiles
    a second time while `mutation` is loaded: `fast` and `deep` must still shrink and draw at random."""
    conftest = runpy.run_path(str(Path(__file__).parents[1] / "conftest.py"))
    settings.load_profile("mutation")
    try:
        runpy.run_path(str(Path(__file__).parents[1] / "conftest.py"))
        for name in ("fast", "deep"):
            again = settings.get_profile(name)
            assert Phase.shrink in again.phases and not again.derandomize, name
    finally:
        settings.load_profile(conftest["get_hypothesis_profile_name"]())
