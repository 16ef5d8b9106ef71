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
    known = defined_names("properties", "tests", "model", "conformance", "differential", "oracle")
    known |= module_level_names("properties")
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


def tagged_definitions(path: Path):
    """(rule id, name) of every function or class in a file whose docstring starts with ``[XX-NN]``; a method is
    named ``Class.method``."""
    tree = parse(path)
    owners = {child: node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for child in node.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            tag = re.match(r"(\[[A-Z]{2,5}-[0-9]{2,3}\] ?)+", ast.get_docstring(node) or "")
            name = f"{owners[node]}.{node.name}" if node in owners else node.name
            for rule_id in re.findall(r"[A-Z]{2,5}-[0-9]{2,3}", tag.group(0) if tag else ""):
                yield rule_id, name


def linked_model_names(text: str) -> set[tuple[str, str]]:
    """(module path, name) of every backticked name inside a link of a Model line to a model module."""
    return {(match["path"], name["name"]) for match in LINK.finditer(text) for name in NAME.finditer(match["text"])}


def test_every_tagged_model_docstring_is_named_by_its_rule():
    """A function or class whose docstring starts with [XX-NN] is listed, by name and module, in XX-NN's Model line."""
    unnamed = [
        f"{path.relative_to(ROOT)}: {name} [{rule_id}]"
        for path in python_files("model")
        for rule_id, name in tagged_definitions(path)
        if (path.relative_to(ROOT).as_posix(), name) not in linked_model_names(FIELDS.get(rule_id, {}).get("Model", ""))
    ]
    assert unnamed == []


def asserts(function: ast.AST) -> bool:
    """Whether a function's own body checks something: an assert, or a call of an assert/check/expect helper."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if CHECKERS.search(callee):
                return True
    return False


def machine_checks_every_step(owner: ast.ClassDef | None) -> bool:
    """Whether a machine has an asserting @invariant, which Hypothesis runs after each of its rules."""
    if owner is None:
        return False
    return any(
        isinstance(method, ast.FunctionDef)
        and any(getattr(getattr(d, "func", d), "id", "") == "invariant" for d in method.decorator_list)
        and asserts(method)
        for method in owner.body
    )


def coverage_ids(node: ast.expr) -> list[str]:
    """The rule ids an event() argument can record as coverage: a literal id, or either branch of a conditional."""
    if isinstance(node, ast.IfExp):
        return coverage_ids(node.body) + coverage_ids(node.orelse)
    if isinstance(node, ast.Constant) and re.fullmatch(r"[A-Z]{2,5}-[0-9]{2,3}", str(node.value)):
        return [node.value]
    return []


def event_sites(tree: ast.Module):
    """(rule id, innermost enclosing function, its class or None) of every ``event("XX-NN")`` call in a module."""
    owners = {child: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for child in node.body}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        inner = {n for child in ast.walk(function) if child is not function
                 and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(child)}
        for node in ast.walk(function):
            is_event = isinstance(node, ast.Call) and getattr(node.func, "id", "") == "event" and node.args
            if is_event and node not in inner:
                for rule_id in coverage_ids(node.args[0]):
                    yield rule_id, function, owners.get(function)


def test_every_event_sits_in_a_step_that_checks_its_rule():
    """An event("XX-NN") is coverage of XX-NN only where the function recording it is named, by itself or by its
    machine class, in XX-NN's Checked by line, and asserts something (a machine's rule: its machine has an asserting
    invariant, run after the step). A step that records a rule it does not check would make the coverage report
    credit a rule nothing tested."""
    lonely = []
    for path in python_files("properties"):
        for rule_id, function, owner in event_sites(parse(path)):
            named = re.findall(r"\w+", FIELDS.get(rule_id, {}).get("Checked by", ""))
            listed = function.name in named or (owner is not None and owner.name in named)
            if not ((asserts(function) or machine_checks_every_step(owner)) and listed):
                lonely.append(f"{path.relative_to(ROOT)}: {function.name} event({rule_id!r})")
    assert lonely == []


@pytest.mark.parametrize("rule_id", sorted(FIELDS))
def test_every_rule_has_a_model_or_says_why(rule_id):
    assert FIELDS[rule_id].get("Model", "").strip(), f"{rule_id} has no Model line"


def test_the_spec_readme_lists_every_chapter_and_links_only_kept_files():
    readme = (ROOT / "spec" / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?:)([^)#]+)", readme)
    assert sorted(p.name for p in (ROOT / "spec").glob("[0-9]*.md")) == sorted(
        t for t in set(targets) if re.fullmatch(r"[0-9]{2}-[a-z0-9-]+\.md", t)
    )
    assert [t for t in targets if not (ROOT / "spec" / t).resolve().exists() or "reports/out" in t] == []
