"""The spec stands alone: each rule's Source cites apache/rocketmq by permalink, never by a private abbreviation.

A permalink is ``https://github.com/apache/rocketmq/blob/<ref>/<path>#L<a>-L<b>`` (or ``#L<a>``) where ``<ref>`` is
the tag of a version profile (``rocketmq-all-4.9.8``, ...) or a full 40-hex commit (``develop`` has no tag), and
a <= b. `get_source_problems` says what is wrong with one Source text; tests/test_spec_sources.py applies it to
every rule.

``python -m tests.spec_permalinks`` (tox env ``spec-permalinks``) also resolves every permalink against a local
git copy of apache/rocketmq named by ``RMQSPEC_ROCKETMQ_MIRROR`` (a clone or a bare mirror): the ref and file must
exist and the file must have line b. It needs that copy, so it is not part of the default test command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from model.values.profiles import PROFILES
from reports.spec_rules import get_rule_fields
from runenv.run_context import SettingError

PERMALINK = re.compile(
    r"https://github\.com/apache/rocketmq/blob/(?P<ref>[^/\s)]+)/(?P<path>[^\s)#]+)(?P<anchor>#[^\s)]*)?"
)
LINE_ANCHOR = re.compile(r"#L(?P<first>[1-9][0-9]*)(?:-L(?P<last>[1-9][0-9]*))?")
FULL_COMMIT = re.compile(r"[0-9a-f]{40}")
RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
# The tags of the version profiles; a profile that is not a release (develop) is cited by a full commit.
PROFILE_TAGS = frozenset(f"rocketmq-all-{name}" for name in PROFILES if RELEASE.fullmatch(name))
# The path abbreviations of the reference notes the spec used to cite (defined outside this repository), and its
# sections (§); a rule id such as CC-01 or PQ-04 is not an abbreviation.
ABBREVIATION = re.compile(
    r"\b(?:ASMP|CCC|CC|CL|CMCS|CMOS|COC|COM|DMPCI|DMPC|DPI|HU|LFOS|MA|MCAI|MCI|MSC|PQ|RBOS|RI|RLM|RPI|SGC|"
    r"SMP|SMS|SPCH)\b(?!-[0-9])|§"
)
MIRROR_VARIABLE = "RMQSPEC_ROCKETMQ_MIRROR"


def get_sources() -> dict[str, str]:
    """Each rule's Source text (rules without one map to the empty string)."""
    return {rule_id: fields.get("Source", "") for rule_id, fields in get_rule_fields().items()}


def get_source_problems(source: str) -> list[str]:
    """What keeps one Source text from standing alone; empty when it cites only by well-formed permalinks."""
    links = list(PERMALINK.finditer(source))
    problems = [] if links else ["no permalink to apache/rocketmq"]
    words = PERMALINK.sub("", source)
    problems += [f"abbreviation or outside reference {found!r}" for found in ABBREVIATION.findall(words)]
    for link in links:
        ref, anchor = link["ref"], link["anchor"] or ""
        if ref not in PROFILE_TAGS and not FULL_COMMIT.fullmatch(ref):
            problems.append(f"{ref!r} is neither a profile's tag ({', '.join(sorted(PROFILE_TAGS))}) nor a full commit")
        lines = LINE_ANCHOR.fullmatch(anchor)
        if lines is None:
            problems.append(f"{link[0]} has no line anchor #L<a> or #L<a>-L<b>")
        elif lines["last"] and int(lines["last"]) < int(lines["first"]):
            problems.append(f"{link[0]} has a range that ends before it starts")
    return problems


def get_mirror(environ=os.environ) -> Path:
    """The git copy RMQSPEC_ROCKETMQ_MIRROR names; SettingError (one line) when it is unset or not a git copy."""
    value = environ.get(MIRROR_VARIABLE, "")
    valid = "the path of a git clone or bare mirror of apache/rocketmq"
    if not value:
        raise SettingError(MIRROR_VARIABLE, value, valid)
    done = subprocess.run(["git", "-C", value, "rev-parse", "--git-dir"], capture_output=True, timeout=30)
    if done.returncode != 0:
        raise SettingError(MIRROR_VARIABLE, value, valid)
    return Path(value)


def count_lines(mirror: Path, ref: str, path: str) -> int | None:
    """Lines of `path` at `ref` in the mirror, or None when the ref or the file does not exist there."""
    done = subprocess.run(["git", "-C", str(mirror), "show", f"{ref}:{path}"], capture_output=True, timeout=60)
    return len(done.stdout.splitlines()) if done.returncode == 0 else None


def get_unresolved(mirror: Path, sources: dict[str, str]) -> list[str]:
    """Every permalink whose ref, file or last line is missing from the mirror, with its rule id."""
    unresolved, lengths = [], {}
    for rule_id, source in sorted(sources.items()):
        for link in PERMALINK.finditer(source):
            key = (link["ref"], link["path"])
            if key not in lengths:
                lengths[key] = count_lines(mirror, *key)
            lines = LINE_ANCHOR.fullmatch(link["anchor"] or "")
            last = int(lines["last"] or lines["first"]) if lines else 0
            if lengths[key] is None or last > lengths[key]:
                unresolved.append(f"{rule_id}: {link[0]} (the file has {lengths[key]} lines)")
    return unresolved


def main() -> int:
    try:
        mirror = get_mirror()
    except SettingError as error:
        print(error, file=sys.stderr)
        return 2
    sources = get_sources()
    unresolved = get_unresolved(mirror, sources)
    total = sum(len(PERMALINK.findall(source)) for source in sources.values())
    print(f"{total - len(unresolved)} of {total} permalinks resolve in {mirror}")
    print("\n".join(unresolved), file=sys.stderr)
    return 1 if unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
