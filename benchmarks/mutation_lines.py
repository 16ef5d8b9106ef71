"""The tests that execute each mutant's mutated statement, for mutmut (tox env `mutation`; benchmarks/MUTATION.md).

    python benchmarks/mutation_lines.py [--trace] [--map]

mutmut runs, for a mutant, every test that called the mutated *function* in its stats run; a survivor costs all of
them. A test that never executes the mutated statement cannot tell the mutant from the original: until that
statement runs, the mutant runs the original's code, and the suite draws the same examples in both runs (the
`mutation` Hypothesis profile is derandomized and has no example database). So it is enough to run the tests that
execute the statement:

- `--trace` runs mutmut's test selection once on the original model/ under coverage.py with one context per test
  (pytest-cov's `--cov-context=test`), into mutants/mutmut-lines.coverage;
- `--map` finds each mutant's mutated lines (its function in mutants/ against the `__mutmut_orig` copy), the
  smallest statement of model/'s source holding them (the whole function for a default argument), and the tests
  that executed a line of it; it writes mutants/mutmut-lines.json, mutant -> tests, with the hash of what it was
  built from.

conftest.py reads that file in mutmut's child for a mutant (MUTANT_UNDER_TEST) and deselects the other tests. A
mutant no test executes keeps one test, so it survives, as it would the whole selection.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

try:
    from coverage import CoverageData  # the tox env `mutation`'s (mutmut's dependency); only --map needs it
except ImportError:  # pragma: no cover - the default venv
    CoverageData = None

LINE_MAP = Path("mutants") / "mutmut-lines.json"
TRACE = Path("mutants") / "mutmut-lines.coverage"
TRACE_LIMIT_S = 3600
HASHED = ("model", "properties", "oracle", "tests", "conftest.py", "pyproject.toml")
MUTANT = "__mutmut_"


def compute_file_hashes(root: Path, tops: tuple[str, ...], suffixes: tuple[str, ...] = (".py",)) -> dict[str, str]:
    """The files under `tops` (folders or files of `root`) with those suffixes: path relative to `root` -> sha256."""
    hashes = {}
    for top in tops:
        path = root / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in suffixes)
        for file in files:
            hashes[file.relative_to(root).as_posix()] = hashlib.sha256(file.read_bytes()).hexdigest()
    return hashes


def compute_tree_hash(root: Path) -> str:
    """sha256 over model/ and the suite (path and content hash of each Python file, in path order)."""
    return hashlib.sha256(json.dumps(compute_file_hashes(root, HASHED), sort_keys=True).encode()).hexdigest()


def get_trace_command(python: str) -> list[str]:
    """mutmut's test selection ([tool.mutmut] in pyproject.toml) under coverage with a context per test; xdist
    spreads it (mutmut's `-p no:xdist` is left out), and coverage's own configuration is not read."""
    mutmut = tomllib.loads(Path("pyproject.toml").read_text())["tool"]["mutmut"]
    args = mutmut["pytest_add_cli_args"]
    drop = {i for i, arg in enumerate(args) if arg == "no:xdist"}
    options = [arg for i, arg in enumerate(args) if i not in drop and i + 1 not in drop]
    return [python, "-m", "pytest", "-n", "2", "--cov=model", "--cov-context=test", "--cov-report=",
            "--cov-config=/dev/null", *options, *mutmut["pytest_add_cli_args_test_selection"]]


def get_changed_span(orig: list[str], mutant: list[str]) -> tuple[int, int]:
    """The first and last line (0-based, in `orig`) a mutant's body changes; its `def` line is compared without the
    name. A change that only inserts lines is given the line it is inserted before."""
    opcodes = [op for op in difflib.SequenceMatcher(None, orig, mutant, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    if not opcodes:
        return 0, 0
    first = min(op[1] for op in opcodes)
    last = max(max(op[2] - 1, op[1]) for op in opcodes)
    return first, min(last, len(orig) - 1)


def read_function_sources(mutated_file: Path) -> dict[str, list[str]]:
    """Each `x_<f>__mutmut_<n>` / `xǁ<Class>ǁ<m>__mutmut_<n>` (and `_orig`) function of a file mutmut wrote: its
    lines, the `def` line's name blanked."""
    text = mutated_file.read_text()
    lines = text.splitlines()
    functions = {}
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and MUTANT in node.name:
            body = lines[node.lineno - 1:node.end_lineno]
            functions[node.name] = [body[0].replace(node.name, "", 1), *body[1:]]
    return functions


def find_source_function(tree: ast.Module, mangled: str) -> ast.FunctionDef | None:
    """The function of model/'s source a mangled name stands for (`x_f` or `xǁClassǁmethod`)."""
    if mangled.startswith("xǁ"):
        class_name, name = mangled[2:].split("ǁ", 1)
        scopes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
        body = scopes[0].body if scopes else []
    else:
        name, body = mangled[2:], tree.body
    found = [node for node in body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]
    return found[0] if found else None


def get_statement_span(function: ast.FunctionDef, first: int, last: int) -> tuple[int, int]:
    """The lines of the smallest statement of `function` holding lines `first`..`last` (the function itself when
    none does: a default argument, the signature)."""
    best = function
    for node in ast.walk(function):
        if isinstance(node, ast.stmt) and node is not function and node.lineno <= first and last <= node.end_lineno:
            if node.end_lineno - node.lineno < best.end_lineno - best.lineno:
                best = node
    return best.lineno, best.end_lineno


def read_tests_by_line(coverage_file: Path) -> dict[str, dict[int, set[str]]]:
    """Source file (relative to the repository) -> line -> the tests (pytest node ids) that executed it."""
    data = CoverageData(basename=str(coverage_file))
    data.read()
    root = Path.cwd().resolve()
    tests: dict[str, dict[int, set[str]]] = {}
    for filename in data.measured_files():
        path = Path(filename).resolve()
        by_line = defaultdict(set)
        for line, contexts in data.contexts_by_lineno(filename).items():
            by_line[line] = {context.rsplit("|", 1)[0] for context in contexts if context}
        tests[path.relative_to(root).as_posix() if path.is_relative_to(root) else filename] = by_line
    return tests


def get_entry_line(function: ast.FunctionDef) -> int:
    """The line of a function's first statement after its docstring: executed on every call (and only then, unlike
    its `def` line, which runs at import)."""
    body = function.body
    is_docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    return body[1].lineno if is_docstring and len(body) > 1 else body[0].lineno


def map_file(source: Path, mutated: Path, by_line: dict[int, set[str]], module: str) -> dict[str, list[str]]:
    """mutant -> the tests that called its function and executed its mutated statement, for one module. mutmut
    switches a mutant on at the call: a test that only ran a closure the function made before (at import, say)
    runs the original's closure."""
    tree = ast.parse(source.read_text())
    functions = read_function_sources(mutated)
    result = {}
    for name, lines in functions.items():
        mangled, number = name.rsplit(MUTANT, 1)
        orig = functions.get(f"{mangled}{MUTANT}orig")
        function = find_source_function(tree, mangled)
        if number == "orig" or orig is None or function is None:
            continue
        first, last = get_changed_span(orig, lines)
        low, high = get_statement_span(function, function.lineno + first, function.lineno + last)
        executed = set().union(*(by_line.get(line, set()) for line in range(low, high + 1)))
        result[f"{module}.{name}"] = sorted(executed & by_line.get(get_entry_line(function), set()))
    return result


def get_function(mutant: str) -> str:
    """The mangled name of a mutant's function (`m.x_f__mutmut_3` -> `m.x_f`)."""
    return mutant.rsplit(MUTANT, 1)[0]


def get_callers(line_map: dict[str, list[str]]) -> dict[str, set[str]]:
    """Function (mutmut's mangled name) -> the tests the map gives any of its mutants."""
    callers: dict[str, set[str]] = defaultdict(set)
    for mutant, tests in line_map.items():
        callers[get_function(mutant)].update(tests)
    return callers


def build_line_map(root: Path, coverage_file: Path) -> dict[str, list[str]]:
    tests_by_line = read_tests_by_line(coverage_file)
    if not any(path.startswith("model/") for path in tests_by_line):
        raise SystemExit(f"{coverage_file} measured no file of {root.resolve()}/model: trace in this tree first")
    line_map = {}
    for source in sorted((root / "model").rglob("*.py")):
        relative = source.relative_to(root)
        mutated = root / "mutants" / relative
        if mutated.is_file():
            module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            line_map.update(map_file(source, mutated, tests_by_line.get(relative.as_posix(), {}), module))
    return line_map


def encode_line_map(line_map: dict[str, list[str]]) -> dict:
    """The file's form: every test once, and each mutant's tests as indices into that list (conftest.py reads it in
    every mutant's run: a tenth of the size of the names)."""
    tests = sorted(set().union(*line_map.values())) if line_map else []
    index = {test: i for i, test in enumerate(tests)}
    return {"tests": tests, "mutants": {mutant: [index[t] for t in names] for mutant, names in line_map.items()}}


def decode_line_map(data: dict) -> dict[str, list[str]]:
    tests = data["tests"]
    return {mutant: [tests[i] for i in indices] for mutant, indices in data["mutants"].items()}


def check_kills(line_map: dict[str, list[str]], kills: Path) -> tuple[int, list[str]]:
    """Of the kills mutmut recorded (conftest.py: mutant, killing test), how many the map would keep, and those it
    would not (the killing test did not execute the mutated statement in the trace)."""
    kept, missed = 0, []
    for line in kills.read_text().splitlines():
        mutant, test, *_ = line.split("\t")
        if mutant not in line_map:
            continue
        if test in line_map[mutant]:
            kept += 1
        else:
            missed.append(f"{mutant}\t{test}")
    return kept, missed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", action="store_true", help="run the test selection under coverage first")
    parser.add_argument("--map", action="store_true", help="write mutants/mutmut-lines.json from the trace")
    parser.add_argument("--check-kills", action="store_true",
                        help="how many of mutmut's recorded kills the map keeps (mutants/mutmut-kills.tsv)")
    args = parser.parse_args(argv)
    root = Path(".")
    if args.trace:
        env = {**os.environ, "COVERAGE_FILE": str(TRACE.resolve()), "PYTHONHASHSEED": "0"}
        code = subprocess.run(get_trace_command(sys.executable), env=env, timeout=TRACE_LIMIT_S, check=False).returncode
        if code != 0:
            print(f"the traced test run failed ({code})", file=sys.stderr)
            return 1
    if args.map:
        line_map = build_line_map(root, TRACE)
        LINE_MAP.write_text(json.dumps({"tree": compute_tree_hash(root), **encode_line_map(line_map)}))
        none = sum(1 for tests in line_map.values() if not tests)
        print(f"{len(line_map)} mutants mapped; {none} executed by no test")
    if args.check_kills:
        line_map = decode_line_map(json.loads(LINE_MAP.read_text()))
        kept, missed = check_kills(line_map, Path("mutants") / "mutmut-kills.tsv")
        print(f"{kept} recorded kills by a test the map keeps; {len(missed)} by one it leaves out")
        print("\n".join(missed[:20]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
