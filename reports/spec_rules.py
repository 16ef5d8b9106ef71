"""The one parser of spec/: which rule ids exist, where they are defined, and where the code cites them.

A rule is defined by a level-3 heading ``### <ID> <title>`` in a chapter ``spec/NN-*.md``; ids look like ``SB-04``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULE_ID = re.compile(r"\b[A-Z]{2,5}-[0-9]{2,3}\b")
RULE_HEADING = re.compile(r"^### (?P<id>[A-Z]{2,5}-[0-9]{2,3}) (?P<title>.+)$")


@dataclass(frozen=True)
class Rule:
    rule_id: str
    title: str
    chapter: str
    line: int


def get_spec_rules(spec_dir: Path = ROOT / "spec") -> list[Rule]:
    """Every rule defined in the chapters, in chapter and line order (duplicates kept, for the check to see)."""
    rules = []
    for chapter in sorted(spec_dir.glob("*.md")):
        for number, text in enumerate(chapter.read_text(encoding="utf-8").splitlines(), start=1):
            match = RULE_HEADING.match(text)
            if match:
                rules.append(Rule(match["id"], match["title"].strip(), chapter.name, number))
    return rules


def get_cited_rule_ids(directory: Path) -> dict[str, set[str]]:
    """Rule ids cited anywhere in the Python files under `directory`, each with the files citing it."""
    cited: dict[str, set[str]] = {}
    for path in sorted(directory.rglob("*.py")):
        for rule_id in RULE_ID.findall(path.read_text(encoding="utf-8")):
            cited.setdefault(rule_id, set()).add(str(path.relative_to(ROOT)))
    return cited


BULLET = re.compile(r"^- \*\*(?P<field>[A-Za-z -]+):\*\*\s*(?P<text>.*)$")
SPEC_PATH = re.compile(r"spec/(?P<file>[0-9]{2}-[a-z0-9-]+\.md)(?:#(?P<anchor>[a-z0-9-]+))?")


def get_rule_fields(spec_dir: Path = ROOT / "spec") -> dict[str, dict[str, str]]:
    """Each rule's bullets (``Source``, ``Model``, ``Checked by``, ``Profiles``), continuation lines joined."""
    fields: dict[str, dict[str, str]] = {}
    for chapter in sorted(spec_dir.glob("[0-9]*.md")):
        current: dict[str, str] | None = None
        field = None
        for text in chapter.read_text(encoding="utf-8").splitlines():
            heading = RULE_HEADING.match(text)
            if heading:
                current, field = fields.setdefault(heading["id"], {}), None
            elif text.startswith("#"):
                current, field = None, None
            elif current is not None and (bullet := BULLET.match(text)):
                field = bullet["field"]
                current[field] = bullet["text"]
            elif current is not None and field and text.startswith("  ") and text.strip():
                current[field] += " " + text.strip()
            else:
                field = None
    return fields


def slugify(title: str, separator: str = "-") -> str:
    """The anchor GitHub makes of a heading (lower case, punctuation dropped, each space a hyphen); the
    documentation site (mkdocs.yml, toc) makes the same, so a `spec/NN-name.md#anchor` link works in both."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", separator)


def get_heading_anchors(chapter: Path) -> set[str]:
    """The anchors GitHub makes of a chapter's headings."""
    return {
        slugify(text.lstrip("#")) for text in chapter.read_text(encoding="utf-8").splitlines() if text.startswith("#")
    }
