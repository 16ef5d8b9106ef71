"""The mutation score of model/ per module, from mutmut's results (tox env `mutation`).

Run from the repository root after `mutmut run`: python benchmarks/mutation_scores.py [--survivors FILE]

The score is (killed + timeout) / checked, where checked = killed + timeout + survived: a mutant no test reaches
("no tests") and one not run yet are counted apart, not as survivors. `--survivors FILE` writes the surviving
mutants' names, one per line, for triage (`mutmut show NAME` prints each one's diff).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

# `mutmut results --all true` prints one "    <module>.<x_function or xǁClassǁmethod>__mutmut_<n>: <status>" line
# per mutant.
LINE = re.compile(r"^\s*(?P<name>(?P<module>[\w.]+?)\.(?:x_|xǁ)\S*__mutmut_\d+): (?P<status>.+)$")
COLUMNS = ("killed", "timeout", "survived", "no tests", "not checked", "other")
RESULTS_LIMIT_S = 600


def parse_results(text: str) -> tuple[dict[str, Counter], list[str]]:
    """(status counts per module, surviving mutants' names) from mutmut's results listing."""
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors = []
    for line in text.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        status = match["status"].strip()
        counts[match["module"]][status if status in COLUMNS else "other"] += 1
        if status == "survived":
            survivors.append(match["name"])
    return counts, survivors


def compute_score(counts: Counter) -> str:
    """(killed + timeout) / checked as a percentage, or "-" when nothing was checked."""
    checked = counts["killed"] + counts["timeout"] + counts["survived"]
    return f"{100 * (counts['killed'] + counts['timeout']) / checked:.0f} %" if checked else "-"


def format_table(counts: dict[str, Counter]) -> str:
    """A Markdown table: one row per module and a total row."""
    rows = ["| module | mutants | " + " | ".join(COLUMNS) + " | score |", "|---" * (len(COLUMNS) + 3) + "|"]
    total: Counter = Counter()
    for module in sorted(counts):
        total.update(counts[module])
        rows.append(format_row(module, counts[module]))
    rows.append(format_row("**all**", total))
    return "\n".join(rows)


def format_row(name: str, counts: Counter) -> str:
    cells = [name, str(sum(counts.values())), *(str(counts[c]) for c in COLUMNS), compute_score(counts)]
    return "| " + " | ".join(cells) + " |"


def get_mutmut() -> str:
    """mutmut beside this interpreter (a venv's, used without activating it), else the one on PATH."""
    beside = Path(sys.executable).with_name("mutmut")
    return str(beside) if beside.is_file() else "mutmut"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", help="write the surviving mutants' names to this file")
    args = parser.parse_args(argv)
    listing = subprocess.run([get_mutmut(), "results", "--all", "true"], capture_output=True, text=True,
                             timeout=RESULTS_LIMIT_S, check=False)
    if listing.returncode != 0:
        print(f"mutmut results failed ({listing.returncode}): {listing.stderr.strip()[-500:]}", file=sys.stderr)
        return 1
    counts, survivors = parse_results(listing.stdout)
    if not counts:
        print("no mutants in mutmut's results: run `mutmut run` first", file=sys.stderr)
        return 1
    print(format_table(counts))
    if args.survivors:
        with open(args.survivors, "w", encoding="utf-8") as out:
            out.writelines(f"{name}\n" for name in survivors)
        print(f"{len(survivors)} survivors written to {args.survivors}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
