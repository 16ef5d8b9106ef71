"""Text that came from a report file, made safe for the medium it goes to: one function per medium.

Report files are input like any other: CI artifacts from many runs, some broken, some crafted. Any of their texts (a
configuration field, a test id, a client's name, a counterexample) may hold markup, terminal control sequences,
Unicode's bidirectional overrides (which make a line read differently from what it holds) or a line of megabytes.

- ``to_terminal``: control characters (C0 but line break and tab, DEL, C1) and the invisible format characters
  that reorder or hide text are shown as their escapes (``\\x1b``, ``\\u202e``), never sent;
- ``to_html``: that, then HTML-escaped (quotes included, so it is safe in an attribute too);
- ``to_markdown``: that, for Markdown that is rendered to HTML (the summary on a code host, the documentation
  site's pages): on one line, HTML's special characters as entities and Markdown's (emphasis, code, links,
  tables, headings, attribute lists) behind a backslash, so the text reads as itself and makes no element;
- ``to_code_block``: the lines of a fenced code block, whose fence the text cannot close.

Each cuts the text at `limit` characters and says how long it was and where the whole text is (`pointer`).
"""

from __future__ import annotations

import html
import re

# C0 controls but tab and line feed, DEL, C1 controls; the bidirectional marks, embeddings, overrides and isolates,
# the line and paragraph separators, the zero-width no-break space (byte order mark).
HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
# What Markdown (Python-Markdown with the site's extensions, GitHub's) may read as markup inside a line of text.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")
HTML_SPECIAL = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
FENCE = re.compile(r"(`{3,}|~{3,})")
# What starts a block when a line begins with it (a heading, list, admonition, details, rule, tabs): such a first
# character (after the escapes above) is written as its numeric character reference, which shows the same and
# starts nothing.
BLOCK_START = re.compile(r"^(?:(?P<mark>[#!?:=])|(?P<bullet>[-+])(?=\s|$|[-+])|\d+(?P<number>[.)])(?=\s|$))")
INLINE_LIMIT, BLOCK_LIMIT = 300, 2000


def show_hidden(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def cut(text: str, limit: int, pointer: str | None) -> str:
    """`text` cut after `limit` characters, with how long it was and where the whole text is."""
    if len(text) <= limit:
        return text
    where = f"; the whole text: {pointer}" if pointer else ""
    return f"{text[:limit]} … (cut at {limit:,} of {len(text):,} characters{where})"


def to_terminal(value: object, limit: int = BLOCK_LIMIT, pointer: str | None = None) -> str:
    """Text for a terminal (and the base of every other medium): nothing hidden is sent, nothing too long."""
    return HIDDEN.sub(show_hidden, cut("" if value is None else str(value), limit, pointer))


def to_html(value: object, limit: int = BLOCK_LIMIT, pointer: str | None = None) -> str:
    """Text for an HTML element or attribute value."""
    return html.escape(to_terminal(value, limit, pointer), quote=True)


def to_markdown(value: object, limit: int = INLINE_LIMIT, pointer: str | None = None) -> str:
    """Text for one line of Markdown (a table cell, a list item, a heading, an admonition's title)."""
    text = " ".join(to_terminal(value, limit, pointer).splitlines())
    text = MARKDOWN_SPECIAL.sub(r"\\\1", text.lstrip())
    text = "".join(HTML_SPECIAL.get(char, char) for char in text)
    return BLOCK_START.sub(write_as_reference, text)


def write_as_reference(match: re.Match) -> str:
    """The character of a block's start as its numeric character reference (``1.`` -> ``1&#46;``)."""
    at = match.start("number") - match.start() if match["number"] else 0
    text = match.group()
    return f"{text[:at]}&#{ord(text[at])};{text[at + 1:]}"


def to_code_block(value: object, language: str = "text", limit: int = BLOCK_LIMIT, pointer: str | None = None):
    """The lines of a fenced code block holding the text (rendered verbatim, so only the fence needs breaking)."""
    text = FENCE.sub(lambda match: " ".join(match.group()), to_terminal(value, limit, pointer))
    return [f"```{language}", *text.splitlines(), "```"]


def to_code_span(value: object, limit: int = INLINE_LIMIT, pointer: str | None = None) -> str:
    """Text as an inline code span (a command, a test id): shown verbatim, between more backticks than it holds."""
    text = " ".join(to_terminal(value, limit, pointer).splitlines()) or " "
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
