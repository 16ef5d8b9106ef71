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
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

from reports.render_markdown import render_coverage_page
from reports.results import Results
from reports.site_rules import get_counterexamples, render_rule_status
from reports.site_sources import get_definitions, get_source_page, stage_sources
from reports.spec_rules import ROOT, RULE_HEADING

try:  # the docs extra (pip install -e '.[docs]'); the aggregate builds no site without it
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
except ImportError:
    build = load_config = None

SPEC = ROOT / "spec"
MKDOCS_YML = ROOT / "mkdocs.yml"
DEFAULT_OUT = ROOT / "reports" / "out"
STAGE, SITE, RESULTS = "site-src", "site", "results.json"
# A link out of spec/ with its text: [`compute_ack_index`](../model/client/concurrently.py), ](../differential/).
OUTSIDE_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<path>\.\./[^)#\s]+)(?P<fragment>#[^)\s]*)?\)")
NAMED = re.compile(r"`(?P<name>[A-Za-z_]\w*)")
NO_AGGREGATE = "No aggregate yet: `python -m reports` runs the suite and writes it, then this page shows it."


def rewrite_links(text: str) -> tuple[str, set[Path]]:
    """`text` with every link out of spec/ pointing at the site's page of that file or directory (at the definition
    of the first name in its text, when the file defines it at top level), and the paths linked. A link to
    something that does not exist is left alone, for the strict build to report."""
    linked: set[Path] = set()

    def rewrite(match: re.Match) -> str:
        path = (SPEC / match["path"]).resolve()
        if not path.exists() or not path.is_relative_to(ROOT):
            return match.group()
        linked.add(path)
        fragment = match["fragment"] or ""
        if not fragment and path.suffix == ".py" and (named := NAMED.search(match["text"])):
            fragment = f"#{named['name']}" if named["name"] in get_definitions(path) else ""
        return f"[{match['text']}]({get_source_page(path)}{fragment})"

    return OUTSIDE_LINK.sub(rewrite, text), linked


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
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # mkdocs-material's banner about a future mkdocs, once a build

    config = load_config(str(MKDOCS_YML), docs_dir=str(stage), site_dir=str(site), strict=True)
    build(config)


def is_mkdocs_installed() -> bool:
    return load_config is not None and importlib.util.find_spec("material") is not None


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
