"""Files of the repository as pages of the documentation site: what spec/ links outside itself (../model/*.py,
../properties/*.py, ../differential/) is shown by the site, so the site needs no repository host and has no broken
link. A Python file is split at its top-level definitions, each with an anchor of its name (``#compute_ack_index``),
so a rule's Model line leads to the function itself."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from reports.spec_rules import ROOT

LANGUAGES = {".py": "python", ".md": "markdown", ".toml": "toml", ".ini": "ini", ".java": "java", ".sh": "bash"}
DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+(?P<name>[A-Za-z_]\w*)")


def get_source_page(path: Path) -> str:
    """The site page (relative to the site's root) that shows a file or directory of the repository."""
    relative = path.relative_to(ROOT).as_posix()
    return f"source/{relative}/index.md" if path.is_dir() else f"source/{relative}.md"


@cache
def get_definitions(path: Path) -> dict[str, int]:
    """Top-level def and class names of a Python file -> the index of the line its block starts on (its first
    decorator, else the def)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: dict[str, int] = {}
    for at, line in enumerate(lines):
        if match := DEFINITION.match(line):
            start = at
            while start > 0 and lines[start - 1].startswith("@"):
                start -= 1
            found.setdefault(match["name"], start)
    return found


def get_fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def list_directory(path: Path) -> list[Path]:
    """The files a directory page lists: the sources under it, no caches or hidden files."""
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and p.suffix in LANGUAGES and not any(part.startswith((".", "__pycache__")) for part in p.parts)
    )


def render_code(path: Path) -> list[str]:
    """The file as numbered code blocks, a new block (with an anchor of its name) at each top-level definition."""
    text = path.read_text(encoding="utf-8")
    lines, fence, language = text.splitlines(), get_fence(text), LANGUAGES.get(path.suffix, "text")
    starts = {0: None} | ({at: name for name, at in get_definitions(path).items()} if path.suffix == ".py" else {})
    bounds = sorted(starts) + [len(lines)]
    blocks = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        if start == end:
            continue
        anchor = [f'<a id="{starts[start]}"></a>', ""] if starts[start] else []
        blocks += [*anchor, f'{fence}{language} linenums="{start + 1}"', *lines[start:end], fence, ""]
    return blocks


def render_source_page(path: Path) -> tuple[str, list[Path]]:
    """(the Markdown page of a repository file or directory, the further files it links)."""
    relative = path.relative_to(ROOT).as_posix()
    if path.is_dir():
        files = list_directory(path)
        items = [f"- [`{f.relative_to(path).as_posix()}`]({f.relative_to(path).as_posix()}.md)" for f in files]
        return "\n".join([f"# `{relative}/`", "", *items, ""]), files
    return "\n".join([f"# `{relative}`", "", *render_code(path)]), []


def stage_sources(stage: Path, paths: set[Path]) -> None:
    """Writes the page of every linked file and directory (and of the files a directory lists)."""
    todo, done = sorted(paths), set()
    while todo:
        path = todo.pop()
        if path in done:
            continue
        done.add(path)
        page, more = render_source_page(path)
        target = stage / get_source_page(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
        todo += more
