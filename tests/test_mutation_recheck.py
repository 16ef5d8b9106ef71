"""benchmarks/mutation_recheck.py: a change of the suite sends back the survivors a changed test could now kill, and
only those when only test files changed; kills stand; a mutant without a verdict is always checked again."""

import json

from benchmarks.mutation_recheck import SUITE_FILES, forget_tests, reset_stale_verdicts, reset_widened, widen_reach

CODES = {"m.x_f__mutmut_1": 1, "m.x_f__mutmut_2": 0, "m.x_f__mutmut_3": 36, "m.x_f__mutmut_4": 2,
         "m.x_f__mutmut_5": 35, "m.x_f__mutmut_6": None, "m.x_g__mutmut_1": 0, "m.x_g__mutmut_2": 1}
STATS = {"duration_by_test": {"properties/test_a.py::test_one": 0.1, "properties/test_b.py::test_two[1]": 0.2},
         "tests_by_mangled_function_name": {"m.x_f": ["properties/test_a.py::test_one"],
                                            "m.x_g": ["properties/test_b.py::test_two[1]"]},
         "stats_time": 1.0}


def make_tree(tmp_path, codes=CODES):
    (tmp_path / "properties").mkdir(exist_ok=True)
    (tmp_path / "properties" / "test_a.py").write_text("def test_one(): assert True\n")
    (tmp_path / "properties" / "test_b.py").write_text("def test_two(): assert True\n")
    (tmp_path / "properties" / "strategies.py").write_text("X = 1\n")
    meta = tmp_path / "mutants" / "model" / "m.py.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps(STATS))
    return meta


def read_codes(meta):
    return json.loads(meta.read_text())["exit_code_by_key"]


def never_refreshed():
    raise AssertionError("no test file changed: mutmut need not trace anything")


def test_an_unknown_suite_sends_back_every_survivor_and_a_known_one_keeps_them(tmp_path):
    meta = make_tree(tmp_path)
    assert reset_stale_verdicts(tmp_path, never_refreshed) == 4  # survivors f2, g1; unjudged f4, f5
    assert read_codes(meta) == {**CODES, "m.x_f__mutmut_2": None, "m.x_f__mutmut_4": None,
                                "m.x_f__mutmut_5": None, "m.x_g__mutmut_1": None}
    assert (tmp_path / SUITE_FILES).is_file()
    meta.write_text(json.dumps({"exit_code_by_key": CODES}))
    assert reset_stale_verdicts(tmp_path, never_refreshed) == 2  # the same suite: only the unjudged go back
    assert read_codes(meta)["m.x_f__mutmut_2"] == 0 and read_codes(meta)["m.x_g__mutmut_1"] == 0


def test_a_changed_test_file_sends_back_only_the_survivors_its_tests_reach_after_mutmut_traced_them(tmp_path):
    meta = make_tree(tmp_path)
    reset_stale_verdicts(tmp_path, never_refreshed)
    meta.write_text(json.dumps({"exit_code_by_key": CODES}))
    (tmp_path / "properties" / "test_b.py").write_text("def test_two(): assert 1\ndef test_new(): assert 1\n")
    stats_path = tmp_path / "mutants" / "mutmut-stats.json"
    seen = []

    def refresh():  # mutmut traces the tests it does not know: test_b's, which reach g and now f too
        stats = json.loads(stats_path.read_text())
        seen.append(sorted(stats["duration_by_test"]))
        stats["duration_by_test"].update({"properties/test_b.py::test_two[1]": 0.2,
                                          "properties/test_b.py::test_new": 0.3})
        stats["tests_by_mangled_function_name"]["m.x_g"].append("properties/test_b.py::test_two[1]")
        stats["tests_by_mangled_function_name"]["m.x_f"].append("properties/test_b.py::test_new")
        stats_path.write_text(json.dumps(stats))
        return True

    assert reset_stale_verdicts(tmp_path, refresh) == 4
    assert seen == [["properties/test_a.py::test_one"]]  # test_b's tests were forgotten before mutmut ran
    assert read_codes(meta) == {**CODES, "m.x_f__mutmut_2": None, "m.x_f__mutmut_4": None,
                                "m.x_f__mutmut_5": None, "m.x_g__mutmut_1": None}
    assert json.loads(stats_path.read_text())["stats_time"] == 1.0  # the rest of mutmut's stats kept


def test_a_changed_test_file_reaching_another_function_keeps_this_ones_survivors(tmp_path):
    meta = make_tree(tmp_path, {"m.x_f__mutmut_2": 0, "m.x_g__mutmut_1": 0, "m.x_g__mutmut_2": 1})
    reset_stale_verdicts(tmp_path, never_refreshed)
    meta.write_text(json.dumps({"exit_code_by_key": {"m.x_f__mutmut_2": 0, "m.x_g__mutmut_1": 0,
                                                     "m.x_g__mutmut_2": 1}}))
    (tmp_path / "properties" / "test_a.py").write_text("def test_one(): assert 1\n")
    stats_path = tmp_path / "mutants" / "mutmut-stats.json"
    assert reset_stale_verdicts(tmp_path, lambda: stats_path.write_text(json.dumps(STATS)) > 0) == 1  # f only
    assert read_codes(meta) == {"m.x_f__mutmut_2": None, "m.x_g__mutmut_1": 0, "m.x_g__mutmut_2": 1}


def test_a_changed_helper_or_a_failed_trace_sends_back_every_survivor(tmp_path):
    codes = {"m.x_f__mutmut_2": 0, "m.x_g__mutmut_1": 0, "m.x_g__mutmut_2": 1}
    meta = make_tree(tmp_path, codes)
    reset_stale_verdicts(tmp_path, never_refreshed)
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "properties" / "strategies.py").write_text("X = 2\n")
    assert reset_stale_verdicts(tmp_path, never_refreshed) == 2
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "properties" / "test_a.py").write_text("def test_one(): assert 2\n")
    assert reset_stale_verdicts(tmp_path, lambda: False) == 2  # mutmut could not trace: the reach is unknown
    assert read_codes(meta) == {**codes, "m.x_f__mutmut_2": None, "m.x_g__mutmut_1": None}


def test_forgetting_a_files_tests_removes_them_from_the_durations_and_every_reach(tmp_path):
    make_tree(tmp_path)
    assert forget_tests(tmp_path, {"properties/test_b.py"}) == 1
    stats = json.loads((tmp_path / "mutants" / "mutmut-stats.json").read_text())
    assert stats["duration_by_test"] == {"properties/test_a.py::test_one": 0.1}
    assert stats["tests_by_mangled_function_name"] == {"m.x_f": ["properties/test_a.py::test_one"], "m.x_g": []}


def test_a_function_reached_by_tests_mutmut_never_traced_gains_them_and_its_survivors_go_back(tmp_path):
    """mutmut traces a test once: a function added since is known to be reached only by tests traced after it. The
    traced run's callers are added to its stats (tests mutmut does not list at all are left out), and the survivors
    and "no tests" mutants of a function that gained tests are checked again; its kills stand."""
    meta = make_tree(tmp_path, {"m.x_f__mutmut_1": 0, "m.x_f__mutmut_2": 33, "m.x_f__mutmut_3": 1,
                                "m.x_g__mutmut_1": 0})
    callers = {"m.x_f": {"properties/test_a.py::test_one", "properties/test_b.py::test_two[1]", "gone::test"},
               "m.x_g": {"properties/test_b.py::test_two[1]"}}
    assert widen_reach(tmp_path, callers) == {"m.x_f"}
    stats = json.loads((tmp_path / "mutants" / "mutmut-stats.json").read_text())
    assert stats["tests_by_mangled_function_name"]["m.x_f"] == ["properties/test_a.py::test_one",
                                                                "properties/test_b.py::test_two[1]"]
    assert reset_widened(tmp_path, {"m.x_f"}) == 2
    assert read_codes(meta) == {"m.x_f__mutmut_1": None, "m.x_f__mutmut_2": None, "m.x_f__mutmut_3": 1,
                                "m.x_g__mutmut_1": 0}


def test_a_changed_helper_only_test_files_import_sends_back_what_those_files_reach(tmp_path):
    """properties/steps.py, imported by test_b.py alone: its change is test_b.py's (m.x_g's survivor goes back,
    m.x_f's stays); once strategies.py imports it too, its change sends back every survivor."""
    codes = {"m.x_f__mutmut_2": 0, "m.x_g__mutmut_1": 0, "m.x_g__mutmut_2": 1}
    meta = make_tree(tmp_path, codes)
    (tmp_path / "properties" / "steps.py").write_text("Y = 1\n")
    (tmp_path / "properties" / "test_b.py").write_text("from properties.steps import Y\ndef test_two(): assert Y\n")
    reset_stale_verdicts(tmp_path, never_refreshed)
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "properties" / "steps.py").write_text("Y = 2\n")
    stats_path = tmp_path / "mutants" / "mutmut-stats.json"

    def refresh():  # mutmut traces test_b's forgotten test again: it reaches g
        stats = json.loads(stats_path.read_text())
        assert "properties/test_b.py::test_two[1]" not in stats["duration_by_test"]
        stats["duration_by_test"]["properties/test_b.py::test_two[1]"] = 0.2
        stats["tests_by_mangled_function_name"]["m.x_g"].append("properties/test_b.py::test_two[1]")
        stats_path.write_text(json.dumps(stats))
        return True

    assert reset_stale_verdicts(tmp_path, refresh) == 1
    assert read_codes(meta) == {**codes, "m.x_g__mutmut_1": None}
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "properties" / "strategies.py").write_text("import properties.steps\n")
    reset_stale_verdicts(tmp_path, never_refreshed)
    meta.write_text(json.dumps({"exit_code_by_key": codes}))
    (tmp_path / "properties" / "steps.py").write_text("Y = 3\n")
    assert reset_stale_verdicts(tmp_path, never_refreshed) == 2
