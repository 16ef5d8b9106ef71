"""benchmarks/mutation_cache.py: the verdicts a new mutants/ takes back from the repository are exactly those of
functions whose source is unchanged, without the interrupted ones, and with the suite's hashes they were taken
under."""

import json

from benchmarks.mutation_cache import CACHE, export_verdicts, import_verdicts, write_cache
from benchmarks.mutation_recheck import SUITE_FILES

KEYS = ("m.x_f__mutmut_1", "m.x_f__mutmut_2", "m.x_f__mutmut_3", "m.x_g__mutmut_1", "m.xǁCǁh__mutmut_2")


def write_meta(root, codes, hashes):
    meta = root / "mutants" / "m.py.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"exit_code_by_key": dict(zip(KEYS, codes, strict=True)),
                                "hash_by_function_name": hashes}))
    return meta


def test_a_new_mutants_folder_takes_back_the_verdicts_of_unchanged_functions_only(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write_meta(old, [1, 0, 2, 33, 36], {"x_f": "aa", "x_g": "bb", "xǁCǁh": "cc"})
    (old / SUITE_FILES).write_text(json.dumps({"tests/test_a.py": "11"}))
    (old / CACHE.parent).mkdir()
    write_cache(old)
    cache = json.loads((old / CACHE).read_text())
    assert cache == export_verdicts(old)
    assert cache["functions"]["m.x_f"] == ["aa", [1, 0, None]]  # the interrupted check (2) is not kept
    assert cache["functions"]["m.xǁCǁh"] == ["cc", [None, 36]]

    meta = write_meta(new, [None] * 5, {"x_f": "aa", "x_g": "changed", "xǁCǁh": "cc"})
    assert import_verdicts(new, cache) == 3
    assert json.loads(meta.read_text())["exit_code_by_key"] == dict(zip(KEYS, [1, 0, None, None, 36], strict=True))
    assert json.loads((new / SUITE_FILES).read_text()) == {"tests/test_a.py": "11"}


def test_a_verdict_mutmut_already_has_and_its_own_suite_hashes_are_kept(tmp_path):
    cache = {"suite": {"tests/test_a.py": "old"}, "functions": {"m.x_f": ["aa", [1, 1, 1]]}}
    meta = write_meta(tmp_path, [0, None, None, None, None], {"x_f": "aa"})
    (tmp_path / SUITE_FILES).write_text(json.dumps({"tests/test_a.py": "new"}))
    assert import_verdicts(tmp_path, cache) == 2
    assert list(json.loads(meta.read_text())["exit_code_by_key"].values())[:3] == [0, 1, 1]
    assert json.loads((tmp_path / SUITE_FILES).read_text()) == {"tests/test_a.py": "new"}
