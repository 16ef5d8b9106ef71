"""Traceability checked by code: the names the spec cites exist, and the code's citations of the spec hold.

The spec's rule bullets name model functions (**Model:**) and properties (**Checked by:**); code cites chapters as
``spec/NN-name.md#anchor``, tags model docstrings ``[XX-NN]`` and marks coverage with ``event("XX-NN")``. Each
citation is resolved here to a real object, file or heading, so that a rename or a deletion fails a test instead
of leaving a stale name behind.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import attrs
import pytest

from reports.spec_rules import ROOT, SPEC_PATH, get_heading_anchors, get_rule_fields

FIELDS = get_rule_fields()
NAME = re.compile(r"`(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?`")
LINK = re.compile(r"\[(?P<text>[^\]]*)\]\(\.\./(?P<path>model/[a-z0-9_/]+\.py)\)")
CHECKERS = re.compile(r"^(assert|check|expect|verify)|raises$")


def python_files(*directories: str) -> list[Path]:
    return sorted(path for directory in directories for path in (ROOT / directory).rglob("*.py"))


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def defined_names(*directories: str) -> set[str]:
    """Every function, method and class defined under the directories, by its own name."""
    return {
        node.name
        for path in python_files(*directories)
        for node in ast.walk(parse(path))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def resolve(module_name: str, dotted: str) -> bool:
    obj = importlib.import_module(module_name)
    for part in dotted.split("."):
        if attrs.has(obj) and part in attrs.fields_dict(obj):
            obj = attrs.fields_dict(obj)[part]
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            return False
    return True


def parameters_and_fields(*directories: str) -> set[str]:
    """Every parameter of a function and every annotated field of a class defined under the directories."""
    names = set()
    for path in python_files(*directories):
        for node in ast.walk(parse(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.update(arg.arg for arg in node.args.args + node.args.kwonlyargs)
            elif isinstance(node, ast.ClassDef):
                fields = [s.target for s in node.body if isinstance(s, ast.AnnAssign)]
                names.update(target.id for target in fields if isinstance(target, ast.Name))
    return names


def module_level_names(*directories: str) -> set[str]:
    """Every name a module under the directories binds at its top level (a machine's TestCase, a constant)."""
    return {
        target.id
        for path in python_files(*directories)
        for node in parse(path).body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }


MODEL_PARAMETERS = parameters_and_fields("model")
# A Checked-by name that is spelt like Python code: snake_case with an underscore, a dotted path, or a CamelCase
# class. Other spans in backticks there are values (a tag `BB`, a Java knob `pullBatchSize`, a property name).
CODE_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+|\w+(\.\w+)+|[A-Z][a-z0-9]+[A-Z]\w*")


def model_modules(text: str) -> list[str]:
    return [match["path"].removesuffix(".py").replace("/", ".") for match in LINK.finditer(text)]


def unresolved_model_names(rule_id: str, text: str) -> list[str]:
    """The backticked names of a Model line that no module it links (or, unlinked, no model module) defines."""
    linked = model_modules(text)
    every_module = [p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".") for p in python_files("model")]
    missing = []
    for match in LINK.finditer(text):
        module = model_modules(match.group(0))[0]
        for name in NAME.finditer(match["text"]):
            if not resolve(module, name["name"]):
                missing.append(f"{rule_id}: {module}.{name['name']}")
    outside = LINK.sub("", text)
    for name in NAME.finditer(outside):
        dotted = name["name"]
        if not (any(resolve(module, dotted) for module in linked + every_module) or dotted in MODEL_PARAMETERS):
            missing.append(f"{rule_id}: {dotted} (in no model module, nor a parameter or field of one)")
    return missing


def test_the_spec_has_model_and_checked_by_lines():
    assert sum("Model" in fields for fields in FIELDS.values()) >= 100
    assert all("Checked by" in fields for fields in FIELDS.values()), "a rule without a Checked by line"


def test_every_model_name_resolves():
    missing = [m for rule_id, f in FIELDS.items() for m in unresolved_model_names(rule_id, f.get("Model", ""))]
    assert missing == []


def test_every_model_link_is_a_module():
    broken = [
        f"{rule_id}: {match['path']}"
        for rule_id, f in FIELDS.items()
        for match in LINK.finditer(f.get("Model", ""))
        if not (ROOT / match["path"]).is_file()
    ]
    assert broken == []


def test_every_checked_by_name_resolves():
    known = defined_names("properties", "tests", "model") | module_level_names("properties")
    known |= parameters_and_fields("properties")
    missing = [
        f"{rule_id}: {name['name']}"
        for rule_id, f in FIELDS.items()
        for name in NAME.finditer(f.get("Checked by", ""))
        if CODE_NAME.fullmatch(name["name"]) and name["name"].split(".")[-1] not in known
    ]
    assert missing == []


def test_every_spec_path_in_code_resolves():
    broken = []
    for path in python_files("model", "properties", "reports", "tests"):
        for match in SPEC_PATH.finditer(path.read_text(encoding="utf-8")):
            chapter = ROOT / "spec" / match["file"]
            if not chapter.is_file():
                broken.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
            elif match["anchor"] and match["anchor"] not in get_heading_anchors(chapter):
                broken.append(f"{path.relative_to(ROOT)}: {match.group(0)} (no such heading)")
    assert broken == []


@pytest.mark.parametrize("rule_id", sorted(FIELDS))
def test_every_rule_has_a_model_or_says_why(rule_id):
    assert FIELDS[rule_id].get("Model", "").strip(), f"{rule_id} has no Model line"
