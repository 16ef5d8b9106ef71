"""Every script of benchmarks/ imports as a module of the `benchmarks` package, as the tox envs import some of them
(engines/conftest.py reads bench_reports' report writer): an import that works only when the script itself runs
would fail there and nowhere else."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py") if path.stem != "__init__")


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_benchmark_script_imports_as_a_package_module(name):
    # A fresh interpreter: sys.path as a tox env's (the repository root first), nothing imported before.
    code = f"import importlib; importlib.import_module('benchmarks.{name}')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_scripts_are_found():
    assert {"bench_reports", "duckdb_job", "mutation_scores"} <= set(SCRIPTS)
    assert importlib.util.find_spec("benchmarks") is not None
