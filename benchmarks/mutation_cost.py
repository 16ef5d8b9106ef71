"""Where mutmut's time goes, from what it recorded in mutants/ (tox env `mutation`; benchmarks/MUTATION.md).

    python benchmarks/mutation_cost.py [--package model.broker] [--slowest 15]

Prints, per package of model/: its mutants, the tests that reach a mutant's function (mutmut runs them all on a
survivor, fastest first, and stops at the first failure), the seconds those tests took in mutmut's clean stats
run (a survivor's worst case); then, of the mutants already run, the wall time per verdict and the part of a
survivor's time that is not its tests (pytest's start and collection in the forked child); and the slowest tests
with the number of functions that reach each; and, from mutants/mutmut-kills.tsv, the tests that killed the most
mutants and how many of the tests a run mutant reached killed none.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

STATS = Path("mutants") / "mutmut-stats.json"
KILLS = Path("mutants") / "mutmut-kills.tsv"  # conftest.py: the first failing test of each killed mutant
# mutmut's exit codes (mutmut.stats.status_by_exit_code; any other is "suspicious").
VERDICTS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 2: "interrupted", 34: "skipped",
            36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -11: "segfault",
            -9: "segfault"}


def get_function_key(mutant: str) -> str:
    """The key of mutmut's stats (`tests_by_mangled_function_name`) for a mutant's name."""
    return mutant.rsplit("__mutmut_", 1)[0]


def read_meta(root: Path) -> dict[str, dict]:
    """Mutant name -> {"code": exit code or None, "seconds": wall time or None}, from every mutants/**/*.py.meta."""
    mutants = {}
    for path in sorted((root / "mutants").rglob("*.py.meta")):
        meta = json.loads(path.read_text())
        durations = meta.get("durations_by_key", {})
        for name, code in meta["exit_code_by_key"].items():
            mutants[name] = {"code": code, "seconds": durations.get(name)}
    return mutants


def describe(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    return (f"n {len(values)}, median {statistics.median(values):.1f}, p90 {values[int(0.9 * (len(values) - 1))]:.1f},"
            f" max {values[-1]:.1f}, sum {sum(values):.0f}")


def report_package(package: str, mutants: dict[str, dict], tests_by_key: dict, durations: dict) -> list[str]:
    names = [name for name in mutants if name.startswith(package + ".")]
    reached = [len(tests_by_key.get(get_function_key(name), ())) for name in names]
    worst = [sum(durations.get(t, 0.0) for t in tests_by_key.get(get_function_key(name), ())) for name in names]
    lines = [f"## {package}: {len(names)} mutants",
             f"tests reaching a mutant's function: {describe([float(r) for r in reached])}",
             f"their seconds in the stats run (a survivor's worst case): {describe(worst)}"]
    by_verdict: dict[str, list[float]] = defaultdict(list)
    overhead = []
    for name in names:
        code, seconds = mutants[name]["code"], mutants[name]["seconds"]
        if code is None or seconds is None:
            continue
        verdict = VERDICTS.get(code, "suspicious")
        by_verdict[verdict].append(seconds)
        if verdict == "survived":
            overhead.append(seconds - sum(durations.get(t, 0.0) for t in tests_by_key.get(get_function_key(name), ())))
    for verdict, seconds in sorted(by_verdict.items()):
        lines.append(f"wall seconds per {verdict} mutant: {describe(seconds)}")
    lines.append(f"a survivor's seconds beyond its tests' (start-up, collection): {describe(overhead)}")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", help="a package of model/ (default: each one)")
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest tests to list")
    args = parser.parse_args(argv)
    if not STATS.is_file():
        print(f"no {STATS}: run mutmut first (tox run -e mutation)", file=sys.stderr)
        return 1
    stats = json.loads(STATS.read_text())
    tests_by_key, durations = stats["tests_by_mangled_function_name"], stats["duration_by_test"]
    mutants = read_meta(Path("."))
    packages = args.package or sorted({".".join(name.split(".")[:2]) for name in mutants})
    for package in packages:
        print("\n".join(report_package(package, mutants, tests_by_key, durations)) + "\n")
    reach = Counter(test for tests in tests_by_key.values() for test in set(tests))
    print(f"## the {args.slowest} slowest of {len(durations)} tests ({sum(durations.values()):.0f} s in all):")
    for test, seconds in sorted(durations.items(), key=lambda item: -item[1])[:args.slowest]:
        print(f"{seconds:7.1f} s  reached by {reach[test]:4d} functions  {test}")
    if KILLS.is_file():
        print("\n".join(report_kills(KILLS.read_text().splitlines(), mutants, tests_by_key, durations, args.slowest)))
    return 0


def report_kills(lines: list[str], mutants: dict[str, dict], tests_by_key: dict, durations: dict,
                 top: int) -> list[str]:
    """The killing tests: the first failure of each killed mutant (the last line of a mutant run again)."""
    killer = {}
    for line in lines:
        fields = line.split("\t")
        if len(fields) == 4:
            killer[fields[0]] = fields[1]
    kills = Counter(killer.values())
    run = [name for name, meta in mutants.items() if meta["code"] is not None and meta["code"] != 33]
    reached = {test for name in run for test in tests_by_key.get(get_function_key(name), ())}
    lines = [f"\n## kills: {len(killer)} killed mutants with their test, by {len(kills)} tests; of the {len(reached)}"
             f" tests that the {len(run)} run mutants reach, {len(reached - set(kills))} killed none"
             f" ({sum(durations.get(t, 0.0) for t in reached - set(kills)):.0f} s of the stats run)"]
    for test, count in kills.most_common(top):
        lines.append(f"{count:5d} kills  {durations.get(test, 0.0):6.1f} s  {test}")
    return lines


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
