"""The documentation site: spec/ staged with each rule's coverage from the latest aggregate, built by mkdocs-material.

    python -m reports.site [--results PATH] [--out DIR] [--stage-only]

stages spec/ into OUT/site-src and builds OUT/site in strict mode (a broken link or anchor fails the build). spec/
stays where it is (tests, Sybil and links depend on its paths); the staged copy differs in three ways:
README.md is the home page; under each rule's bullets, its coverage from the aggregate (configurations, test cases,
gaps, expected refutations) and its counterexamples; and links out of spec/ (../model/*.py, ../differential/)
point to pages of the site that show those files, so the site needs no repository host and works from file://.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

from reports.results import Results
from reports.site_rules import get_counterexamples, render_rule_status
from reports.spec_rules import ROOT, RULE_HEADING

SPEC = ROOT / "spec"
MKDOCS_YML = ROOT / "mkdocs.yml"
DEFAULT_OUT = ROOT / "reports" / "out"
STAGE, SITE, RESULTS = "site-src", "site", "results.json"
# A link out of spec/: ](../model/client/orderly.py) or ](../differential/), with an optional #fragment.
OUTSIDE_LINK = re.compile(r"\]\((?P<path>\.\./[^)#\s]+)(?P<fragment>#[^)\s]*)?\)")
LANGUAGES = {".py": "python", ".md": "markdown", ".toml": "toml", ".ini": "ini", ".java": "java", ".sh": "bash"}
NO_AGGREGATE = "No aggregate yet: `python -m reports` runs the suite and writes it, then this page shows it."


def get_source_page(path: Path) -> str:
    """The site page (relative to the site's root) that shows a file or directory of the repository."""
    relative = path.relative_to(ROOT).as_posix()
    return f"source/{relative}/index.md" if path.is_dir() else f"source/{relative}.md"


def rewrite_links(text: str) -> tuple[str, set[Path]]:
    """`text` with every link out of spec/ pointing at the site's page of that file or directory, and the paths
    linked. A link to something that does not exist is left alone, for the strict build to report."""
    linked: set[Path] = set()

    def rewrite(match: re.Match) -> str:
        path = (SPEC / match["path"]).resolve()
        if not path.exists() or not path.is_relative_to(ROOT):
            return match.group()
        linked.add(path)
        return f"]({get_source_page(path)}{match['fragment'] or ''})"

    return OUTSIDE_LINK.sub(rewrite, text), linked


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


def render_source_page(path: Path) -> tuple[str, list[Path]]:
    """(the Markdown page of a repository file or directory, the further files it links)."""
    relative = path.relative_to(ROOT).as_posix()
    if path.is_dir():
        files = list_directory(path)
        items = [f"- [`{f.relative_to(path).as_posix()}`]({f.relative_to(path).as_posix()}.md)" for f in files]
        return "\n".join([f"# `{relative}/`", "", *items, ""]), files
    text = path.read_text(encoding="utf-8")
    fence = get_fence(text)
    language = LANGUAGES.get(path.suffix, "text")
    return f'# `{relative}`\n\n{fence}{language} linenums="1"\n{text}\n{fence}\n', []


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


def add_rule_status(text: str, results: Results | None) -> str:
    """The chapter with each rule's coverage block after the rule's bullets (or its heading, if it has none)."""
    lines = text.splitlines()
    counterexamples = get_counterexamples(results) if results else {}
    places = []
    for at, line in enumerate(lines):
        heading = RULE_HEADING.match(line)
        if heading:
            places.append((find_end_of_bullets(lines, at), heading["id"]))
    for at, rule_id in reversed(places):
        lines[at:at] = ["", *render_rule_status(rule_id, results, counterexamples), ""]
    return "\n".join(lines) + "\n"


def find_end_of_bullets(lines: list[str], heading: int) -> int:
    """The line after the rule's bullet list (``- **Source:** ...`` and their indented continuations)."""
    at = heading + 1
    while at < len(lines) and not lines[at].startswith(("- **", "#")):
        at += 1
    if at == len(lines) or lines[at].startswith("#"):
        return heading + 1
    while at < len(lines) and (lines[at].startswith("- **") or (lines[at].startswith("  ") and lines[at].strip())):
        at += 1
    return at


def stage_site(results: Results | None, stage: Path, heat_map: bytes | None = None, spec: Path = SPEC) -> None:
    """Writes the site's sources: the chapters of `spec` (README.md as index.md) with coverage, the coverage page,
    the linked source files as pages (links resolved from spec/'s place in the repository)."""
    from reports.render_markdown import render_coverage_page

    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    linked: set[Path] = set()
    for chapter in sorted(spec.glob("*.md")):
        text, found = rewrite_links(chapter.read_text(encoding="utf-8"))
        linked |= found
        if chapter.name == "README.md":
            (stage / "index.md").write_text(text, encoding="utf-8")
        else:
            (stage / chapter.name).write_text(add_rule_status(text, results), encoding="utf-8")
    stage_sources(stage, linked)
    page = f"# Coverage of the spec rules\n\n{NO_AGGREGATE}\n"
    if results:
        page = render_coverage_page(results, spec_link=".")
    if heat_map:
        (stage / "coverage.png").write_bytes(heat_map)
        title, rest = page.split("\n", 1)
        page = f"{title}\n\n![rules x configurations, a panel per chapter](coverage.png)\n{rest}"
    (stage / "coverage.md").write_text(page, encoding="utf-8")


def build_site(stage: Path, site: Path) -> None:
    """mkdocs build --strict of the staged sources into `site` (mkdocs.yml's settings; a warning fails it)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # mkdocs-material's banner about a future mkdocs, once a build

    config = load_config(str(MKDOCS_YML), docs_dir=str(stage), site_dir=str(site), strict=True)
    build(config)


def is_mkdocs_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("mkdocs") is not None and importlib.util.find_spec("material") is not None


def write_site(results: Results | None, out: Path, heat_map: bytes | None = None) -> Path:
    """Stages and builds the site under `out`; returns the site's directory."""
    stage_site(results, out / STAGE, heat_map)
    build_site(out / STAGE, out / SITE)
    return out / SITE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.site", description=__doc__.split("\n\n")[0])
    out_help = "the aggregate's output directory (default: %(default)s)"
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=out_help)
    parser.add_argument("--results", type=Path, help=f"the aggregate's results (default: OUT/{RESULTS}, if there)")
    parser.add_argument("--stage-only", action="store_true", help="write OUT/site-src only (then: mkdocs build)")
    args = parser.parse_args(argv)
    path = args.results or args.out / RESULTS
    results = Results.from_json(path.read_text(encoding="utf-8")) if path.exists() else None
    if results is None:
        print(f"site: no aggregate at {path}; the rules show no coverage", file=sys.stderr)
    heat_map = args.out / "coverage.png"
    stage_site(results, args.out / STAGE, heat_map.read_bytes() if heat_map.exists() else None)
    if not args.stage_only:
        build_site(args.out / STAGE, args.out / SITE)
        print(f"site: {args.out / SITE / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
