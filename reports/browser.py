"""Headless chromium for the report page and the documentation site: the DOM a page ends up with, a screenshot,
and a check that every link of a page leads somewhere (local files only; nothing is fetched from the network).

Chromium runs once per page with its own profile directory and a time limit, so nothing outlives a call."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

TIME_LIMIT_S = 60
NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    return next((path for path in map(shutil.which, NAMES) if path), None)


def run_chromium(chromium: str, url: str, *flags: str) -> str:
    """Chromium headless on `url` with `flags`; its stdout. A page that does not settle in time is an error."""
    with tempfile.TemporaryDirectory(prefix="rmqspec-chromium-") as profile:
        command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
        command += [f"--user-data-dir={profile}", "--allow-file-access-from-files", *flags, url]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIME_LIMIT_S, check=True)
    return done.stdout


def dump_dom(chromium: str, page: Path, *flags: str) -> str:
    """The page's DOM after its scripts ran."""
    return run_chromium(chromium, page.resolve().as_uri(), "--dump-dom", "--virtual-time-budget=5000", *flags)


def take_screenshot(chromium: str, page: Path, target: Path, size: str = "1280,2000") -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    run_chromium(chromium, page.resolve().as_uri(), f"--screenshot={target}", f"--window-size={size}")
    return target


class Links(HTMLParser):
    """Every element id, every link and every resource of a DOM."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.figures: list[tuple[str, str]] = []  # (data-figure, its text): the report page's headline
        self._figure: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self._figure = found.get("data-figure")
        if found.get("id"):
            self.ids.add(found["id"])
        for name in ("href", "src"):
            if found.get(name) and not (tag == "link" and found.get("rel") in ("preconnect", "dns-prefetch")):
                self.links.append(found[name])

    def handle_data(self, data):
        if self._figure:
            self.figures.append((self._figure, data))
            self._figure = None


class Browser:
    """One chromium binary, each page's DOM dumped once."""

    def __init__(self, chromium: str):
        self.chromium = chromium
        self.doms: dict[Path, Links] = {}

    def load(self, page: Path) -> Links:
        page = page.resolve()
        if page not in self.doms:
            self.doms[page] = Links(dump_dom(self.chromium, page))
        return self.doms[page]

    def find_broken_links(self, page: Path, follow: bool = True) -> tuple[list[str], list[str]]:
        """(the broken links of `page`, its links to the network, which are not fetched). A local link is broken
        when its file is missing or its #fragment names no element of the page it leads to; with `follow`, every
        local HTML page it leads to is loaded in chromium (else only the page itself, for its own #fragments)."""
        broken, remote = [], []
        for link in self.load(page).links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https"):
                remote.append(link)
                continue
            if parts.scheme in ("data", "mailto", "javascript") or not (parts.path or parts.fragment):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page.resolve()
            if parts.scheme not in ("", "file") or not target.exists():
                broken.append(link)
            elif target.suffix == ".html" and (follow or target == page.resolve()):
                if parts.fragment and unquote(parts.fragment) not in self.load(target).ids:
                    broken.append(link)
                self.load(target)
        return broken, remote
