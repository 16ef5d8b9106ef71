"""model/ is layered: the import-linter contracts of pyproject.toml hold, no import hides inside a function or under
TYPE_CHECKING, and the client half touches only its own fields of the cluster state."""

from __future__ import annotations

import ast
from pathlib import Path

import attrs
from importlinter.cli import lint_imports

from model.client.cluster import Cluster
from model.system.state import System

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "model"


def model_trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
            for path in sorted(MODEL.rglob("*.py"))]


def test_the_import_contracts_hold():
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_no_import_inside_a_function():
    found = [f"{path.relative_to(ROOT)}:{node.lineno}"
             for path, tree in model_trees()
             for function in ast.walk(tree) if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
             for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom)]
    assert found == []


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
