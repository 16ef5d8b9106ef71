"""benchmarks/mutation_prekill.py: a failing run against the given tests is recorded as a kill; anything else, and
every mutant that already has a verdict or lies outside the given modules, is left as it was."""

import json

from benchmarks.mutation_prekill import KILLED, prekill

CODES = {"model.broker.store.x_f__mutmut_1": None, "model.broker.store.x_f__mutmut_2": None,
         "model.broker.store.x_f__mutmut_3": None, "model.broker.store.x_f__mutmut_4": 0,
         "model.broker.stores.x_g__mutmut_1": None}


def make_meta(tmp_path):
    meta = tmp_path / "mutants" / "model" / "broker" / "store.py.meta"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"exit_code_by_key": CODES, "hash_by_function_name": {}}))
    return meta


def test_a_failing_run_is_recorded_as_a_kill_and_nothing_else_changes(tmp_path):
    meta = make_meta(tmp_path)
    answers = {"model.broker.store.x_f__mutmut_1": 1, "model.broker.store.x_f__mutmut_2": 0,
               "model.broker.store.x_f__mutmut_3": None}
    calls = []

    def run(root, name, tests, limit_s):
        calls.append((name, tuple(tests), limit_s))
        return answers[name]

    assert prekill(tmp_path, ["model.broker.store"], ["tests/test_x.py"], 2, 30.0, run) == (3, 1)
    assert sorted(calls) == [(name, ("tests/test_x.py",), 30.0) for name in sorted(answers)]
    codes = json.loads(meta.read_text())["exit_code_by_key"]
    assert codes == {**CODES, "model.broker.store.x_f__mutmut_1": KILLED}


def test_a_pass_that_kills_nothing_writes_nothing(tmp_path):
    meta = make_meta(tmp_path)
    before = meta.read_text()
    assert prekill(tmp_path, ["model.broker.stores"], ["t.py"], 1, 1.0, lambda *_: 0) == (1, 0)
    assert meta.read_text() == before
