"""model/ is layered: the import-linter contracts of pyproject.toml hold, no import hides under TYPE_CHECKING, and the
client half touches only its own fields of the cluster state; in the whole repository no import hides inside a
function (outside the places REMAINING lists, each with its count) and no two modules import each other."""

from __future__ import annotations

import ast
import logging
import subprocess
from pathlib import Path

import attrs
import grimp
from importlinter.cli import lint_imports

from model.client.cluster import Cluster
from model.system.state import System

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "model"


def model_trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
            for path in sorted(MODEL.rglob("*.py"))]


def test_the_import_contracts_hold():
    # import-linter configures logging with dictConfig, which disables every logger that exists already (mkdocs'
    # among them, so a later strict site build in this process would count no warning): restored after.
    loggers = [logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)]
    disabled = [logger.disabled for logger in loggers]
    try:
        assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0
    finally:
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was


# Function-local imports that remain outside model/, reports/, runenv/ and reportformat/ (issue 34 banned them
# there), per file: the count can only go down. A new one anywhere fails; so does a file's count left stale.
REMAINING = {
    "benchmarks/bench_differential.py": 10,
    "benchmarks/bench_fault_verdicts.py": 2,
    "benchmarks/bench_system.py": 3,
    "conformance/runner/backends/fixtures.py": 8,
    "conformance/runner/backends/rocketmq.py": 1,
    "conformance/runner/clients/cpp_adapter.py": 2,
    "conformance/runner/clients/protocol.py": 2,
    "conformance/runner/clients/python5_adapter.py": 5,
    "conformance/runner/server/core.py": 1,
    "conformance/suite/replay.py": 3,
    "differential/conftest.py": 1,
    "differential/test_broker_rules.py": 1,
    "properties/test_orderly_system.py": 1,
    "properties/test_system.py": 1,
    "tests/conformance/test_java_settings.py": 1,
    "tests/test_backends.py": 1,
}
# Every package of the repository, for the import graph (grimp reads function-level imports too).
PACKAGES = ["model", "oracle", "runenv", "reportformat", "conformance", "properties", "reports", "differential",
            "engines", "benchmarks", "tests"]


def get_local_imports(tree: ast.Module) -> set[int]:
    """The lines of the import statements inside a function or lambda (at any depth)."""
    return {node.lineno
            for function in ast.walk(tree) if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)}


def get_repository_modules() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_no_import_inside_a_function():
    found = {str(path.relative_to(ROOT)): len(lines)
             for path in get_repository_modules()
             if (lines := get_local_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))}
    assert found == REMAINING


def test_the_ban_sees_an_import_in_a_nested_function_and_a_lambda():
    tree = ast.parse("def f():\n    def g():\n        import os\n    return lambda: __import__('x')\n"
                     "import sys\nclass C:\n    from os import path\n")
    assert get_local_imports(tree) == {3}


def find_cycles(graph) -> list[list[str]]:
    """The import cycles of `graph` (its strongly connected components of more than one module), by Tarjan's
    algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack, on_stack, cycles = [], set(), []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, edges = work[-1]
            following = next((m for m in edges if m not in index or m in on_stack), None)
            if following is not None and following not in index:
                index[following] = low[following] = len(index)
                stack.append(following)
                on_stack.add(following)
                work.append((following, iter(sorted(graph.find_modules_directly_imported_by(following)))))
                continue
            if following is not None:
                low[module] = min(low[module], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_two_modules_import_each_other():
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    assert find_cycles(graph) == []


def test_the_cycle_finder_sees_a_cycle_through_three_modules():
    graph = grimp.ImportGraph()
    for importer, imported in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "e2")]:
        graph.add_import(importer=importer, imported=imported)
    assert find_cycles(graph) == [["a", "b", "c"]]


def is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def test_no_import_hides_under_type_checking():
    """A lower layer does not name a higher one's types even in annotations (the client's state is its Cluster)."""
    found = [f"{path.relative_to(ROOT)}:{block.lineno}"
             for path, tree in model_trees()
             for block in tree.body if is_type_checking(block)]
    assert found == []


def test_the_system_state_has_every_field_of_the_clients_view():
    assert set(Cluster.__annotations__) <= {field.name for field in attrs.fields(System)}


def test_the_client_half_touches_no_field_of_the_cluster_beyond_its_view():
    """No client module reads or sets the broker's or the network's fields of the state (`system.broker`,
    `evolve(cluster, oneway=...)`): the client reaches them only by exchanging requests."""
    others = {field.name for field in attrs.fields(System)} - set(Cluster.__annotations__)
    found = [f"{path.relative_to(ROOT)}:{node.lineno} {name}"
             for path, tree in model_trees() if path.parent.name == "client"
             for node in ast.walk(tree)
             for name in ([node.attr] if isinstance(node, ast.Attribute) else
                          [k.arg for k in node.keywords] if isinstance(node, ast.Call) else [])
             if name in others]
    assert others >= {"broker", "oneway", "hold_oneway"} and found == []


def test_the_readme_layout_table_names_every_layer():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(" `") for line in table.splitlines() if line.startswith("| `")}
    layers = {f"model/{path.parent.name}/" for path in MODEL.glob("*/__init__.py")}
    assert layers and layers <= rows


def test_modules_and_functions_stay_small():
    """One concept per module (at most 400 lines), one step per function (at most 40 lines)."""
    long_modules = [str(path.relative_to(ROOT)) for path, _tree in model_trees()
                    if len(path.read_text(encoding="utf-8").splitlines()) > 400]
    long_functions = [f"{path.relative_to(ROOT)}:{node.name}"
                      for path, tree in model_trees()
                      for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                      if node.end_lineno - node.lineno + 1 > 40]
    assert long_modules == [] and long_functions == []
