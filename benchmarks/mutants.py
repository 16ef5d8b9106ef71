"""The planted-bug catalogue: apply each small bug of `mutants.toml` to a copy of the project, run the property
suite against it, and print whether it was killed, how fast, and how short the shrunk counterexample was.

    python benchmarks/mutants.py                    # every mutant, 2 at a time
    python benchmarks/mutants.py --only M03,M17     # some of them
    python benchmarks/mutants.py --gate             # exit 1 unless the gate holds (tox env `mutants`)

Each mutant is one textual replacement in one file of model/ (`old` must occur exactly once), named after the
RocketMQ issue, commit or source line whose bug it mirrors. A copy runs `pytest properties -x` in the Hypothesis
profile the environment selects (the default test command's: `fast`, or `ci` under CI=true), with the test
files that cite the mutated module's rules first — as mutation tools run the tests that cover a line first — and
a wall-clock limit per run (the process group is killed). Time to the first failure is measured from the first
test's start (tests/ collection and interpreter start are the same for every mutant).

The gate: every mutant killed, each within the per-run limit, the median time to the first failure <= 5 s and
none over 30 s. The unmutated copy runs first: a suite that fails on its own kills nothing.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = Path(__file__).with_name("mutants.toml")
RULE_TAG = re.compile(r"\[([A-Z]{2,4}-\d{2,3})\]")
RULE_ID = re.compile(r"\b([A-Z]{2,4}-\d{2,3})\b")
GATE_MEDIAN_SECONDS = 5.0
GATE_MAX_SECONDS = 30.0
# pytest-timeout's limit per test in a mutant's run: a planted bug that makes a test hang fails it (a kill, with
# the hanging test named) instead of using up the run's wall-clock limit.
WATCHDOG_SECONDS = 30


@attrs.frozen
class Mutant:
    """One planted bug: `old` becomes `new` in `file`; `mirrors` names the real bug or source line."""

    id: str
    name: str
    mirrors: str
    file: str
    old: str
    new: str


@attrs.frozen
class Outcome:
    mutant: Mutant
    verdict: str  # killed | survived | timeout | not-applied
    seconds: float | None = None
    steps: int | None = None
    test: str | None = None
    wall: float = 0.0


def load_catalogue(path: Path) -> list[Mutant]:
    """The catalogue's mutants; ids unique, every field present."""
    entries = tomllib.loads(path.read_text(encoding="utf-8"))["mutant"]
    mutants = [Mutant(**entry) for entry in entries]
    ids = [m.id for m in mutants]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise SystemExit(f"{path}: mutant ids used twice: {', '.join(duplicated)}")
    return mutants


def get_project_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=root, check=True,
                         capture_output=True, text=True, timeout=60).stdout
    return [line for line in out.splitlines() if line and (root / line).is_file()]


def copy_project(root: Path, files: list[str], target: Path) -> None:
    for name in files:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target / name)


def apply_mutant(copy: Path, mutant: Mutant) -> str | None:
    """Plants the bug; returns why it cannot be planted, or None."""
    path = copy / mutant.file
    if not path.is_file():
        return f"{mutant.file} does not exist"
    text = path.read_text(encoding="utf-8")
    found = text.count(mutant.old)
    if found != 1:
        return f"`old` occurs {found} times in {mutant.file} (must be exactly once)"
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return None


def get_function_rules(text: str, line: int) -> set[str]:
    """The rule ids in the docstring of the innermost function around `line` of a module's `text`."""
    rules: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= node.end_lineno:
            rules = set(RULE_TAG.findall(ast.get_docstring(node) or ""))  # ast.walk reaches inner ones later
    return rules


def order_test_files(copy: Path, mutant: Mutant | None) -> list[str]:
    """properties/ test files: first those citing the rules of the mutated function, smallest (most focused)
    first; then those citing most of the mutated module's rule ids (stable otherwise)."""
    files = sorted(p.relative_to(copy).as_posix() for p in (copy / "properties").glob("test_*.py"))
    if mutant is None:
        return files
    text = (copy / mutant.file).read_text(encoding="utf-8")
    line = text[:max(text.find(mutant.new), 0)].count("\n") + 1
    function_rules, module_rules = get_function_rules(text, line), set(RULE_TAG.findall(text))
    cited = {f: set(RULE_ID.findall((copy / f).read_text(encoding="utf-8"))) for f in files}
    sizes = {f: (copy / f).stat().st_size for f in files}

    def key(f: str) -> tuple:
        focused = bool(function_rules & cited[f])
        return (not focused, sizes[f] if focused else 0, -len(module_rules & cited[f]))

    return sorted(files, key=key)


def run_suite(copy: Path, test_files: list[str], timeout: float) -> tuple[dict | None, float]:
    """Runs `pytest -x` over the files in the copy; (the timing plugin's result or None on timeout, wall s)."""
    result_file = copy / ".mutant-result.json"
    env = {**os.environ, "RMQSPEC_MUTANT_RESULT": str(result_file), "RMQSPEC_REPORTS": "0",
           "PYTHONPATH": os.pathsep.join([str(copy), str(copy / "benchmarks")])}
    command = [sys.executable, "-m", "pytest", *test_files, "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
               "-p", "mutant_timing", "-o", "addopts=", "-o", f"timeout={WATCHDOG_SECONDS}"]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return None, time.monotonic() - started
    wall = time.monotonic() - started
    if not result_file.is_file():
        # The watchdog (pytest-timeout's thread method) ended the run: a test hung, and the suite failed.
        hung = process.returncode != 0
        return {"exit": process.returncode, "first_failure": "(a test hung: the watchdog ended the run)" if hung
                else None, "seconds": wall if hung else None, "steps": None}, wall
    return json.loads(result_file.read_text(encoding="utf-8")), wall


def measure_mutant(mutant: Mutant | None, files: list[str], timeout: float) -> Outcome | dict | None:
    """A fresh copy, the bug planted, the suite run; for `None` (the control run) the plugin's raw result."""
    with tempfile.TemporaryDirectory(prefix="rmqspec-mutant-") as tmp:
        copy = Path(tmp)
        copy_project(ROOT, files, copy)
        if mutant is not None:
            why = apply_mutant(copy, mutant)
            if why:
                return Outcome(mutant, "not-applied", test=why)
        result, wall = run_suite(copy, order_test_files(copy, mutant), timeout)
    if mutant is None:
        return result
    if result is None:
        return Outcome(mutant, "timeout", wall=wall)
    if result["first_failure"] is None:
        return Outcome(mutant, "survived", wall=wall)
    return Outcome(mutant, "killed", result["seconds"], result["steps"], result["first_failure"], wall)


def render_outcomes(outcomes: list[Outcome]) -> list[str]:
    lines = [f"{'id':<5} {'verdict':<11} {'s to kill':>9} {'steps':>5}  mutant / killed by"]
    for o in outcomes:
        seconds = "-" if o.seconds is None else f"{o.seconds:.1f}"
        steps = "-" if o.steps is None else str(o.steps)
        lines.append(f"{o.mutant.id:<5} {o.verdict:<11} {seconds:>9} {steps:>5}  {o.mutant.name}")
        if o.test:
            lines.append(f"{'':<34}{o.test}")
    return lines


def format_seconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def compute_figures(outcomes: list[Outcome]) -> dict:
    killed = [o for o in outcomes if o.verdict == "killed"]
    times = sorted(o.seconds for o in killed if o.seconds is not None)
    steps = sorted(o.steps for o in killed if o.steps is not None)
    return {
        "mutants": len(outcomes),
        "killed": len(killed),
        "median_seconds": statistics.median(times) if times else None,
        "max_seconds": times[-1] if times else None,
        "median_steps": statistics.median(steps) if steps else None,
    }


def is_gate_met(figures: dict) -> bool:
    return (figures["killed"] == figures["mutants"] > 0 and figures["median_seconds"] <= GATE_MEDIAN_SECONDS
            and figures["max_seconds"] <= GATE_MAX_SECONDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--catalogue", type=Path, default=CATALOGUE, help="the TOML catalogue")
    parser.add_argument("--only", default="", help="comma-separated mutant ids (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once")
    parser.add_argument("--timeout", type=float, default=120.0, help="wall-clock seconds per run")
    parser.add_argument("--gate", action="store_true", help="exit 1 unless the gate holds")
    args = parser.parse_args(argv)
    mutants = load_catalogue(args.catalogue)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {m.id for m in mutants}
        if unknown:
            parser.error(f"--only: unknown mutant ids {', '.join(sorted(unknown))}")
        mutants = [m for m in mutants if m.id in wanted]
    files = get_project_files(ROOT)
    control = measure_mutant(None, files, args.timeout)
    if control is None or control["first_failure"] is not None:
        print(f"the unmutated suite does not pass ({control}): nothing can be measured", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda m: measure_mutant(m, files, args.timeout), mutants))
    print("\n".join(render_outcomes(outcomes)))
    figures = compute_figures(outcomes)
    print(f"\nkilled {figures['killed']}/{figures['mutants']}; time to the first failure: median "
          f"{format_seconds(figures['median_seconds'])} s, max {format_seconds(figures['max_seconds'])} s; "
          "shrunk steps: median "
          f"{figures['median_steps']} (profile: {os.environ.get('RMQSPEC_HYPOTHESIS_PROFILE') or 'default'})")
    if args.gate and not is_gate_met(figures):
        print(f"gate not met: all killed, median <= {GATE_MEDIAN_SECONDS} s, max <= {GATE_MAX_SECONDS} s")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
