"""reports/ stands beside the suite, not on it: it reads the suite's report files and spec/, and imports neither the
suite's configuration (properties/suite.py) nor any other test module; the report writer runs without PySpark."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from reports.spec_rules import ROOT

MODULES = sorted((ROOT / "reports").glob("*.py"))


def get_imported(path) -> set[str]:
    """Every module name an import statement of `path` names (at any depth, function-level imports included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_reports_import_no_test_module(path):
    assert sorted(name for name in get_imported(path) if name.split(".")[0] in {"properties", "tests"}) == []


def test_the_checker_sees_a_function_level_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from properties.suite import SUITE\n    import tests.x\n", encoding="utf-8")
    assert get_imported(module) == {"properties.suite", "tests.x"}


def test_the_report_writer_imports_without_pyspark():
    """The plugin writes report files in tox envs that do not install PySpark."""
    code = "import sys; sys.modules['pyspark'] = None; import reports.plugin, reportformat.lines"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_site_builder_imports_without_matplotlib_or_pyspark():
    """tox env docs installs mkdocs only: the site renders Markdown and draws no PNG."""
    code = "import sys; sys.modules['matplotlib'] = sys.modules['pyspark'] = None; import reports.site"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_aggregate_imports_without_jsonschema():
    """tox envs aggregate, browser and spark-* install PySpark and matplotlib, not jsonschema."""
    code = "import sys; sys.modules['jsonschema'] = None; import reports.job, reports.__main__"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
