"""Which of mutmut's verdicts a change of the suite sends back to be checked (mutation_scores.py --all).

mutmut keeps each verdict under the hash of the mutated function's source, but it does not watch the tests: a new
test can kill a mutant that survived. A kill stands (the suite only gains tests); a survivor is checked again when a
test that could now kill it changed:

- when only test files changed (`test_*.py`), the survivors of the functions those files' tests reach. mutmut knows a
  test's reach from tracing it (mutants/mutmut-stats.json); the changed files' tests are forgotten there first, so
  that mutmut's next start traces them again, new and edited ones alike (`refresh`), and their reach is read after;
- when a helper module that only test files import changed (properties/steps.py), as when those test files changed;
- when anything else of the suite changed (a strategy, an oracle, conftest.py), every survivor: such a file can
  change what any test draws or asserts.

A mutant without a verdict (its check interrupted at a budget, or suspicious) is always checked again.

mutmut traces a test once, when it first sees it: a function added or changed since is known to be reached only by
the tests traced after it, so its mutants would be run against too few. The traced run of mutation_lines.py knows
every test that calls each function; `widen_reach` adds the missing ones to mutmut's stats, and the survivors (and
mutants with "no tests") of a function that gained tests are checked again.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path

from benchmarks.mutation_lines import compute_file_hashes, get_function

# What the verdicts depend on besides model/.
SUITE_PATHS = ("properties", "oracle", "tests", "conftest.py")
SUITE_FILES = Path("mutants") / "suite-files.json"  # path -> sha256 of each suite file when the verdicts were taken
STATS = Path("mutants") / "mutmut-stats.json"
SURVIVED = 0
NO_TESTS = (5, 33)  # mutmut's exit codes of a mutant no test reached
UNJUDGED = frozenset({2, 35})  # mutmut's exit codes of an interrupted check and of a suspicious one


def compute_suite_files(root: Path) -> dict[str, str]:
    """The suite's Python and Markdown files (path relative to `root`) with the sha256 of each."""
    return compute_file_hashes(root, SUITE_PATHS, (".py", ".md"))


def get_changed_files(old: dict[str, str], new: dict[str, str]) -> set[str]:
    """The files added, removed or edited between two snapshots."""
    return {path for path in old.keys() | new.keys() if old.get(path) != new.get(path)}


def is_test_file(path: str) -> bool:
    return Path(path).name.startswith("test_") and path.endswith(".py")


def get_module_name(path: str) -> str:
    """`properties/steps.py` -> `properties.steps`."""
    return path[:-3].replace("/", ".")


def get_imported_modules(source: str) -> set[str]:
    """The modules a Python source imports by name (`import a.b`, `from a.b import c`, and `a.b.c` for the latter)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def replace_test_helpers(root: Path, changed: set[str], suite: dict[str, str]) -> set[str]:
    """`changed`, with each changed helper module that only test files import replaced by those test files; a
    helper that some other file imports, or none does, stays (so every survivor goes back)."""
    helpers = {path for path in changed if path.endswith(".py") and not is_test_file(path)
               and Path(path).name != "conftest.py" and (root / path).is_file()}
    if not helpers:
        return changed
    imports = {path: get_imported_modules((root / path).read_text(encoding="utf-8"))
               for path in suite if path.endswith(".py") and path not in helpers}
    replaced = set(changed)
    for helper in helpers:
        importers = {path for path, names in imports.items() if get_module_name(helper) in names}
        if importers and all(is_test_file(path) for path in importers):
            replaced = (replaced - {helper}) | importers
    return replaced


def get_test_file(test: str) -> str:
    """The file of a pytest node id (`properties/test_x.py::test_y[param]`)."""
    return test.split("::", 1)[0]


def forget_tests(root: Path, files: set[str]) -> int:
    """Remove the tests of `files` from mutmut's stats, so that its next start traces them as new; returns how many."""
    stats = json.loads((root / STATS).read_text())
    durations = stats["duration_by_test"]
    forgotten = {test for test in durations if get_test_file(test) in files}
    for test in forgotten:
        del durations[test]
    reach = stats["tests_by_mangled_function_name"]
    for function, tests in reach.items():
        reach[function] = [test for test in tests if test not in forgotten]
    (root / STATS).write_text(json.dumps(stats))
    return len(forgotten)


def get_reached_functions(root: Path, files: set[str]) -> set[str]:
    """The mangled names of the functions some test of `files` reaches, in mutmut's stats."""
    reach = json.loads((root / STATS).read_text())["tests_by_mangled_function_name"]
    return {function for function, tests in reach.items() if any(get_test_file(t) in files for t in tests)}


def reset_verdicts(root: Path, is_stale: Callable[[str, int | None], bool]) -> int:
    """Mark not checked (None) every mutant whose verdict `is_stale(name, exit code)`; returns how many."""
    reset = 0
    for meta_path in sorted((root / "mutants").rglob("*.py.meta")):
        meta = json.loads(meta_path.read_text())
        stale = [name for name, code in meta["exit_code_by_key"].items() if code is not None and is_stale(name, code)]
        for name in stale:
            meta["exit_code_by_key"][name] = None
        if stale:
            meta_path.write_text(json.dumps(meta, indent=4))
        reset += len(stale)
    return reset


def widen_reach(root: Path, callers: dict[str, set[str]]) -> set[str]:
    """Add to each function's tests in mutmut's stats the tests that call it (`callers`, from a traced run); returns
    the functions that gained tests."""
    stats = json.loads((root / STATS).read_text())
    reach, durations = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    widened = set()
    for function, tests in callers.items():
        missing = {test for test in tests if test in durations} - set(reach.get(function, ()))
        if missing:
            reach[function] = sorted(set(reach.get(function, ())) | missing)
            widened.add(function)
    (root / STATS).write_text(json.dumps(stats))
    return widened


def reset_widened(root: Path, widened: set[str]) -> int:
    """Send back the survivors and the "no tests" mutants of functions that gained tests."""
    return reset_verdicts(root, lambda name, code: code in (SURVIVED, *NO_TESTS) and get_function(name) in widened)


def reset_stale_verdicts(root: Path, refresh: Callable[[], bool]) -> int:
    """Send back the verdicts the suite's change since they were taken may have made stale (the module's docstring);
    `refresh` has mutmut trace the tests it does not know, and says whether it did. Returns how many were sent back."""
    current = compute_suite_files(root)
    stored_path = root / SUITE_FILES
    stored = json.loads(stored_path.read_text()) if stored_path.is_file() else None
    changed = get_changed_files(stored, current) if stored is not None else None
    if changed:
        changed = replace_test_helpers(root, changed, current)
    reset = reset_verdicts(root, lambda _name, code: code in UNJUDGED)
    if changed:
        if all(is_test_file(path) for path in changed) and (root / STATS).is_file():
            forget_tests(root, changed)
            if refresh():
                reached = get_reached_functions(root, changed)
                reset += reset_verdicts(root, lambda name, code: code == SURVIVED and get_function(name) in reached)
                changed = set()
        if changed:
            reset += reset_verdicts(root, lambda _name, code: code == SURVIVED)
    elif changed is None:  # the verdicts' suite is unknown
        reset += reset_verdicts(root, lambda _name, code: code == SURVIVED)
    stored_path.parent.mkdir(parents=True, exist_ok=True)
    stored_path.write_text(json.dumps(current, indent=1, sort_keys=True))
    return reset
