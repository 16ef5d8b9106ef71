"""mutmut's verdicts kept in the repository (benchmarks/mutation-verdicts.json), so that a new mutants/ — a fresh
clone, a CI run without a cache, a new machine — goes on from the last recorded run of `mutation_scores.py --all`
instead of from nothing.

A function's verdicts are keyed by the hash mutmut gives its source (mutants/<file>.meta): they are taken back only
for a function whose source is unchanged. The suite's file hashes when they were taken come along
(mutants/suite-files.json), so mutation_recheck.py sends back the survivors a changed test reaches, as it does
between two runs in one mutants/. Interrupted and suspicious checks are not kept: they are checked again anyway.

    python benchmarks/mutation_cache.py --export    # mutants/ -> benchmarks/mutation-verdicts.json
    python benchmarks/mutation_cache.py --import    # benchmarks/mutation-verdicts.json -> a new mutants/
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.mutation_lines import MUTANT, get_function  # noqa: E402
from benchmarks.mutation_recheck import SUITE_FILES, UNJUDGED  # noqa: E402

CACHE = Path("benchmarks") / "mutation-verdicts.json"


def get_number(name: str) -> int:
    return int(name.rsplit(MUTANT, 1)[1])


def read_metas(root: Path) -> dict[Path, dict]:
    return {path: json.loads(path.read_text()) for path in sorted((root / "mutants").rglob("*.py.meta"))}


def export_verdicts(root: Path) -> dict:
    """{"suite": the suite's file hashes, "functions": {function: [source hash, [exit code or None per mutant]]}}."""
    functions: dict[str, list] = {}
    for meta in read_metas(root).values():
        for name, code in meta["exit_code_by_key"].items():
            function = get_function(name)
            source_hash = meta["hash_by_function_name"].get(function.rsplit(".", 1)[1])
            entry = functions.setdefault(function, [source_hash, []])
            codes, number = entry[1], get_number(name)
            codes.extend([None] * (number - len(codes)))
            codes[number - 1] = None if code in UNJUDGED else code
    suite_path = root / SUITE_FILES
    suite = json.loads(suite_path.read_text()) if suite_path.is_file() else {}
    return {"suite": suite, "functions": dict(sorted(functions.items()))}


def import_verdicts(root: Path, cache: dict) -> int:
    """Fill the unchecked mutants of every function whose source hash is the cached one; write the cached suite
    hashes where mutants/ has none. Returns how many verdicts were taken back."""
    taken = 0
    for path, meta in read_metas(root).items():
        codes, taken_before = meta["exit_code_by_key"], taken
        for name, code in codes.items():
            function = get_function(name)
            source_hash, cached = cache["functions"].get(function, (None, []))
            number = get_number(name)
            if code is not None or source_hash is None or number > len(cached) or cached[number - 1] is None:
                continue
            if meta["hash_by_function_name"].get(function.rsplit(".", 1)[1]) == source_hash:
                codes[name] = cached[number - 1]
                taken += 1
        if taken > taken_before:
            path.write_text(json.dumps(meta))
    suite_path = root / SUITE_FILES
    if not suite_path.is_file():
        suite_path.write_text(json.dumps(cache["suite"], indent=0, sort_keys=True))
    return taken


def write_cache(root: Path) -> None:
    """benchmarks/mutation-verdicts.json from mutants/: one line per function, so a diff shows what changed."""
    data = export_verdicts(root)
    lines = [json.dumps(function) + ": " + json.dumps(entry, separators=(",", ":"))
             for function, entry in data["functions"].items()]
    text = ('{"suite": ' + json.dumps(data["suite"], sort_keys=True) + ',\n"functions": {\n' + ",\n".join(lines)
            + "\n}}\n")
    (root / CACHE).write_text(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--export", action="store_true", help="mutants/ -> " + str(CACHE))
    action.add_argument("--import", dest="import_", action="store_true", help=str(CACHE) + " -> mutants/")
    args = parser.parse_args(argv)
    root = Path(".")
    if args.export:
        write_cache(root)
        print(f"{CACHE} written", flush=True)
    else:
        print(f"{import_verdicts(root, json.loads((root / CACHE).read_text()))} verdicts taken back", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
