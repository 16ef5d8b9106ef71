"""The mutation score of model/ per module, from mutmut's results (tox env `mutation`).

Run from the repository root after mutmut has made its mutants (any `mutmut run`):

    python benchmarks/mutation_scores.py [--per-module K [--seed S] [--run]] [--survivors FILE]

The score is (killed + timeout) / checked, where checked = killed + timeout + survived: a mutant no test reaches
("no tests") and one not run yet are counted apart, not as survivors. `--survivors FILE` writes the surviving
mutants' names, one per line, for triage (`mutmut show NAME` prints each one's diff).

Every mutant of model/ is hours of CPU on 2 cores, so the whole of model/ is run across CI-sized runs:
`--all --budget-s S` runs mutmut on the mutants not checked yet, in chunks, package by package, until S seconds are
spent, and prints the score of every module so far. Nothing is lost between runs: mutmut keeps each mutant's verdict
in mutants/<file>.meta under the hash of its function's source, and forgets only those of a function whose source
changed; this script adds the suite's side (`--all`, benchmarks/mutation_recheck.py): a survivor is checked again
when a test that reaches its function changed since its verdict (every survivor when a file of the suite other than
a test file changed), a kill stands (the suite only ever gains tests), and a mutant mutmut could not judge (an
interrupted check) is always checked again. Run again until nothing is left "not checked".

`--per-module K` scores a stratified random sample instead: K mutants drawn from each module (all of a smaller one)
with a seeded generator, so the same options name the same mutants; `--run` first runs mutmut on those of the sample
it has not checked. Each module's score then comes with its 95 % Wilson interval, and the total is weighted by the
modules' sizes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.mutation_cache import CACHE, import_verdicts, write_cache  # noqa: E402
from benchmarks.mutation_lines import LINE_MAP, compute_tree_hash, decode_line_map, get_callers  # noqa: E402
from benchmarks.mutation_recheck import (  # noqa: E402
    STATS,
    SUITE_FILES,
    get_function,
    reset_stale_verdicts,
    reset_widened,
    widen_reach,
)

# `mutmut results --all true` prints one "    <module>.<x_function or xǁClassǁmethod>__mutmut_<n>: <status>" line
# per mutant.
LINE = re.compile(r"^\s*(?P<name>(?P<module>[\w.]+?)\.(?:x_|xǁ)\S*__mutmut_\d+): (?P<status>.+)$")
COLUMNS = ("killed", "timeout", "survived", "no tests", "not checked", "other")
RESULTS_LIMIT_S = 600
REFRESH_LIMIT_S = 1800  # for the mutmut run that traces the tests of changed files (mutation_recheck)
# Mutants per mutmut run of --all. Each run first lists the suite and runs the chunk's tests unmutated, minutes
# when the system machines reach the chunk: fewer, larger runs spend less on that (benchmarks/MUTATION.md).
CHUNK = 5000  # more than the largest package (model.client, 4,417 mutants)
STOP_LIMIT_S = 120  # for an interrupted mutmut run to stop its children and record what it has


def list_mutants(text: str) -> dict[str, dict[str, str]]:
    """Module -> mutant name -> status, from mutmut's results listing."""
    mutants: dict[str, dict[str, str]] = defaultdict(dict)
    for line in text.splitlines():
        match = LINE.match(line)
        if match is not None:
            mutants[match["module"]][match["name"]] = match["status"].strip()
    return mutants


def parse_results(text: str) -> tuple[dict[str, Counter], list[str]]:
    """(status counts per module, surviving mutants' names) from mutmut's results listing."""
    return count_statuses(list_mutants(text))


def count_statuses(mutants: dict[str, dict[str, str]]) -> tuple[dict[str, Counter], list[str]]:
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors = []
    for module, statuses in mutants.items():
        for name, status in statuses.items():
            counts[module][status if status in COLUMNS else "other"] += 1
            if status == "survived":
                survivors.append(name)
    return counts, survivors


def draw_sample(mutants: dict[str, dict[str, str]], per_module: int, seed: int) -> dict[str, dict[str, str]]:
    """`per_module` mutants of each module (all of a smaller one), drawn by a generator seeded per module."""
    sample = {}
    for module, statuses in sorted(mutants.items()):
        names = sorted(statuses)
        drawn = random.Random(f"{seed}:{module}").sample(names, min(per_module, len(names)))
        sample[module] = {name: statuses[name] for name in sorted(drawn)}
    return sample


def compute_interval(killed: int, checked: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a kill rate (killed of checked)."""
    rate = killed / checked
    centre = (rate + z * z / (2 * checked)) / (1 + z * z / checked)
    half = z * math.sqrt(rate * (1 - rate) / checked + z * z / (4 * checked * checked)) / (1 + z * z / checked)
    return max(0.0, centre - half), min(1.0, centre + half)


def compute_score(counts: Counter) -> str:
    """(killed + timeout) / checked as a percentage, or "-" when nothing was checked."""
    checked = counts["killed"] + counts["timeout"] + counts["survived"]
    return f"{100 * (counts['killed'] + counts['timeout']) / checked:.0f} %" if checked else "-"


def format_table(counts: dict[str, Counter], sizes: dict[str, int] | None = None) -> str:
    """A Markdown table: one row per module and a total row; of a sample (`sizes`: each module's mutants), with each
    score's 95 % interval and the total weighted by the modules' sizes."""
    extra = ["module size", "95 % interval"] if sizes else []
    rows = ["| module | mutants | " + " | ".join([*COLUMNS, "score", *extra]) + " |"]
    rows.append("|---" * (len(COLUMNS) + 3 + len(extra)) + "|")
    total: Counter = Counter()
    for module in sorted(counts):
        total.update(counts[module])
        rows.append(format_row(module, counts[module], sizes))
    last = format_row("**all**", total)
    rows.append(last + f" {sum(sizes.values())} | {estimate_total(counts, sizes)} |" if sizes else last)
    return "\n".join(rows)


def format_row(name: str, counts: Counter, sizes: dict[str, int] | None = None) -> str:
    cells = [name, str(sum(counts.values())), *(str(counts[c]) for c in COLUMNS), compute_score(counts)]
    if sizes and name in sizes:
        checked = counts["killed"] + counts["timeout"] + counts["survived"]
        low, high = compute_interval(checked - counts["survived"], checked) if checked else (math.nan, math.nan)
        cells += [str(sizes[name]), f"{100 * low:.0f}-{100 * high:.0f} %" if checked else "-"]
    return "| " + " | ".join(cells) + " |"


def estimate_total(counts: dict[str, Counter], sizes: dict[str, int]) -> str:
    """model/'s score estimated from a stratified sample: each module's rate weighted by its size."""
    weighted = weight = 0.0
    for module, module_counts in counts.items():
        checked = module_counts["killed"] + module_counts["timeout"] + module_counts["survived"]
        if checked:
            weighted += sizes[module] * (checked - module_counts["survived"]) / checked
            weight += sizes[module]
    return f"estimated {100 * weighted / weight:.0f} % (modules weighted by size)" if weight else "-"


def get_mutmut() -> str:
    """mutmut beside this interpreter (a venv's, used without activating it), else the one on PATH."""
    beside = Path(sys.executable).with_name("mutmut")
    return str(beside) if beside.is_file() else "mutmut"


def read_mutants() -> dict[str, dict[str, str]] | None:
    listing = subprocess.run([get_mutmut(), "results", "--all", "true"], capture_output=True, text=True,
                             timeout=RESULTS_LIMIT_S, check=False)
    if listing.returncode != 0:
        print(f"mutmut results failed ({listing.returncode}): {listing.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    return list_mutants(listing.stdout)


def run_sample(sample: dict[str, dict[str, str]], max_children: int) -> int:
    """mutmut run on the sample's mutants it has not checked yet (named mutants are run again even if checked)."""
    pending = [name for statuses in sample.values() for name, status in statuses.items() if status == "not checked"]
    print(f"mutmut run on {len(pending)} sampled mutants not checked yet", flush=True)
    if not pending:
        return 0
    return subprocess.run([get_mutmut(), "run", "--max-children", str(max_children), *pending], check=False).returncode


def count_by_package(counts: dict[str, Counter]) -> dict[str, Counter]:
    """The status counts of each package of model/ (model.broker, model.client, ...; a subpackage such as
    model.broker.pop counts in its package)."""
    packages: dict[str, Counter] = defaultdict(Counter)
    for module, module_counts in counts.items():
        packages[".".join(module.split(".")[:2])].update(module_counts)
    return dict(packages)


def run_all(budget_s: float, max_children: int, package: str | None, chunk: int = CHUNK) -> int:
    """[--all] mutmut on every mutant of model/ (or of `package`) not checked yet, `chunk` at a time, package by
    package in name order, until `budget_s` is spent; mutmut records each verdict as it goes. A mutmut run still going
    when the budget is spent is interrupted (SIGINT: it stops its children and keeps every verdict it has)."""
    if not SUITE_FILES.is_file() and CACHE.is_file():  # a new mutants/: go on from the verdicts kept in the repository
        taken = import_verdicts(Path("."), json.loads(CACHE.read_text()))
        print(f"{taken} verdicts taken back from {CACHE} (benchmarks/mutation_cache.py)", flush=True)
    reset = reset_stale_verdicts(Path("."), lambda: refresh_stats(max_children))
    print(f"{reset} survivors or unjudged mutants to check again (benchmarks/mutation_recheck.py)", flush=True)
    ensure_line_map(max_children)
    started = time.monotonic()
    mutants = read_mutants() or {}
    pending = sorted(name for module, statuses in mutants.items() if package is None or module.startswith(package)
                     for name, status in statuses.items() if status == "not checked")
    print(f"{len(pending)} mutants not checked yet; budget {budget_s:.0f} s", flush=True)
    while pending and time.monotonic() - started < budget_s:
        names, pending = pending[:chunk], pending[chunk:]
        for _attempt in range(2):  # mutmut first runs the chunk's tests unmutated: a flaky test fails it once
            code = run_mutmut(names, max_children, budget_s - (time.monotonic() - started))
            if code in (0, None):
                break
        if code is None:  # interrupted at the budget: some of the chunk may be left
            pending = names + pending
        if code not in (0, None):
            return code
    print(f"at most {len(pending)} left for the next run ({time.monotonic() - started:.0f} s spent)", flush=True)
    write_cache(Path("."))
    print(f"the verdicts so far are in {CACHE}: commit it, and a new mutants/ goes on from them", flush=True)
    return 0


def ensure_line_map(max_children: int) -> bool:
    """mutants/mutmut-lines.json for model/ and the suite as they are (benchmarks/mutation_lines.py): when either
    changed, mutmut makes the mutants of the current model/ and the suite is traced again. Without a current map
    each mutant runs every test of its function. Whether there is one."""
    tree = compute_tree_hash(Path("."))
    if LINE_MAP.is_file() and json.loads(LINE_MAP.read_text()).get("tree") == tree:
        return True
    LINE_MAP.unlink(missing_ok=True)
    print("tracing which tests execute each statement of model/ (benchmarks/mutation_lines.py)", flush=True)
    if not refresh_stats(max_children):
        return False
    lines = Path(__file__).with_name("mutation_lines.py")
    code = subprocess.run([sys.executable, str(lines), "--trace", "--map"], check=False).returncode
    if code != 0:
        LINE_MAP.unlink(missing_ok=True)
        return False
    widened = widen_reach(Path("."), get_callers(decode_line_map(json.loads(LINE_MAP.read_text()))))
    reset = reset_widened(Path("."), widened)
    print(f"{len(widened)} functions reached by tests mutmut had not traced; {reset} of their mutants to check again",
          flush=True)
    return True


def refresh_stats(max_children: int) -> bool:
    """Have mutmut trace the tests it does not know (it does at the start of any run): run it on the killed mutant
    whose tests are quickest, which it checks again — or, in a new mutants/ with nothing killed yet, on the quickest
    mutant not checked yet. Whether it ran."""
    name = get_cheapest_mutant(Path("."), 1) or get_cheapest_mutant(Path("."), None)
    return name is not None and run_mutmut([name], max_children, REFRESH_LIMIT_S) == 0


def get_cheapest_kill(root: Path) -> str | None:
    """The killed mutant (exit code 1) whose function's tests took least in mutmut's stats run."""
    return get_cheapest_mutant(root, 1)


def get_cheapest_mutant(root: Path, code: int | None) -> str | None:
    """The mutant of that exit code (None: not checked yet) whose function's tests took least in mutmut's stats
    run."""
    stats = json.loads((root / STATS).read_text())
    durations, reach = stats["duration_by_test"], stats["tests_by_mangled_function_name"]
    names = [name for meta_path in sorted((root / "mutants").rglob("*.py.meta"))
             for name, status in json.loads(meta_path.read_text())["exit_code_by_key"].items() if status == code]
    cost = {name: sum(durations.get(test, 0.0) for test in reach.get(get_function(name), ())) for name in names}
    return min(names, key=lambda name: (cost[name], name)) if names else None


def run_mutmut(names: list[str], max_children: int, limit_s: float) -> int | None:
    """`mutmut run` on `names`; None when it was interrupted at `limit_s`."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # as in the traced run of benchmarks/mutation_lines.py
    mutmut = subprocess.Popen([get_mutmut(), "run", "--max-children", str(max_children), *names], env=env)
    try:
        return mutmut.wait(timeout=max(limit_s, 1))
    except subprocess.TimeoutExpired:
        mutmut.send_signal(signal.SIGINT)
        try:
            mutmut.wait(timeout=STOP_LIMIT_S)
        except subprocess.TimeoutExpired:
            mutmut.kill()
            mutmut.wait()
        return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", help="write the surviving mutants' names to this file")
    parser.add_argument("--per-module", type=int, help="score a stratified sample of this many mutants per module")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--run", action="store_true", help="run mutmut on the sample's unchecked mutants first")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--all", action="store_true", help="run every mutant not checked yet, within --budget-s")
    parser.add_argument("--budget-s", type=float, default=3000, help="seconds of mutmut per --all run")
    parser.add_argument("--package", help="--all: only this package's mutants (e.g. model.broker)")
    parser.add_argument("--chunk", type=int, default=CHUNK, help=f"--all: mutants per mutmut run (default {CHUNK})")
    args = parser.parse_args(argv)
    if args.all and run_all(args.budget_s, args.max_children, args.package, args.chunk) != 0:
        return 1
    mutants = read_mutants()
    if not mutants:
        print("no mutants in mutmut's results: run `mutmut run` first", file=sys.stderr)
        return 1
    sizes = {module: len(statuses) for module, statuses in mutants.items()} if args.per_module else None
    if args.per_module:
        if args.run and run_sample(draw_sample(mutants, args.per_module, args.seed), args.max_children) != 0:
            return 1
        mutants = draw_sample(read_mutants() or {}, args.per_module, args.seed)
        print(f"A sample of {args.per_module} mutants per module (seed {args.seed}) of {sum(sizes.values())}:")
    counts, survivors = count_statuses(mutants)
    print(format_table(counts, sizes))
    if not args.per_module:
        print("\nBy package:\n" + format_table(count_by_package(counts)))
    if args.survivors:
        with open(args.survivors, "w", encoding="utf-8") as out:
            out.writelines(f"{name}\n" for name in survivors)
        print(f"{len(survivors)} survivors written to {args.survivors}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
