"""A quick first pass for mutants that nearly every test reaches, run by hand between two mutmut runs (mutmut must not
be running: both write mutants/<file>.meta).

`mutation_scores.py --all` gives each mutant every test that executed its line. For the store's and the commit
log's core functions that is most of the suite, minutes per mutant. Here each unchecked mutant of the given modules
runs, in mutants/, against the given test files only (`pytest -x` with MUTANT_UNDER_TEST set, as mutmut's children
run; the conftest keeps the tests of those files that executed the mutated line). A failing run is a kill and is
recorded as mutmut records one (exit code 1). Any other outcome leaves the mutant unchecked for mutmut's full run:
surviving a few test files does not make it a survivor of the suite.

    python benchmarks/mutation_prekill.py --module model.broker.commit_log --tests properties/test_store.py \\
        tests/test_commit_log.py --jobs 2 --limit-s 120
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.mutation_cache import read_metas  # noqa: E402
from benchmarks.mutation_lines import get_function  # noqa: E402

KILLED = 1  # pytest's exit code when a test failed: mutmut's "killed"
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:sybil"]


def get_unchecked(metas: dict[Path, dict], modules: list[str]) -> list[str]:
    """The mutants without a verdict whose function is in one of `modules` (a module or a package prefix)."""
    return sorted(name for meta in metas.values() for name, code in meta["exit_code_by_key"].items()
                  if code is None and any(get_function(name).startswith(f"{module}.") for module in modules))


def run_mutant(root: Path, name: str, tests: list[str], limit_s: float) -> int | None:
    """pytest's exit code for `name` against `tests` in mutants/, or None past `limit_s`."""
    env = {**os.environ, "MUTANT_UNDER_TEST": name}
    try:
        done = subprocess.run([sys.executable, *PYTEST, *tests], cwd=root / "mutants", env=env,
                              capture_output=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return None
    return done.returncode


def record_kills(metas: dict[Path, dict], killed: set[str]) -> int:
    """Write exit code 1 for each killed mutant into its .meta file (only the files that change); returns how many."""
    recorded = 0
    for path, meta in metas.items():
        codes = meta["exit_code_by_key"]
        mine = [name for name in codes if name in killed and codes[name] is None]
        for name in mine:
            codes[name] = KILLED
        if mine:
            path.write_text(json.dumps(meta, indent=4))
            recorded += len(mine)
    return recorded


def prekill(root: Path, modules: list[str], tests: list[str], jobs: int, limit_s: float,
            run: Callable[[Path, str, list[str], float], int | None] = run_mutant) -> tuple[int, int]:
    """Runs the pass; returns (mutants tried, kills recorded)."""
    metas = read_metas(root)
    names = get_unchecked(metas, modules)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        codes = list(pool.map(lambda name: run(root, name, tests, limit_s), names))
    killed = {name for name, code in zip(names, codes, strict=True) if code == KILLED}
    return len(names), record_kills(metas, killed)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", action="append", required=True, help="a module or package of model/ (repeatable)")
    parser.add_argument("--tests", nargs="+", required=True, help="test files, relative to the repository")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--limit-s", type=float, default=120.0, help="seconds per mutant before it is left unchecked")
    args = parser.parse_args(argv)
    tried, killed = prekill(Path("."), args.module, args.tests, args.jobs, args.limit_s)
    print(f"{tried} unchecked mutants tried, {killed} killed and recorded, {tried - killed} left for mutmut")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
