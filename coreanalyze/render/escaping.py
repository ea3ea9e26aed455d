"""Escaping for Markdown, where no library does it for us.

Everything from a core is untrusted. In Markdown, untrusted text goes through one of:

- `md_text`: prose outside code (summary, advice, evidence, warnings). Every character that
  could start Markdown or HTML syntax is backslash-escaped, line breaks become spaces (a
  newline could start a heading, a list or a new block), and line-start markers are defused.
- `md_code`: an inline code span whose delimiter is longer than any backtick run inside.
- `md_fence`: a fenced block whose fence is longer than any backtick run inside, so content
  cannot close it early.
- `md_html_text`: text inside raw HTML in the Markdown (`<summary>`), where backslash escapes
  do not apply: HTML entities for <>&"' and for Markdown punctuation.

Their results are `MarkdownSafe` strings; the Markdown template environment escapes every
other value with `md_text` on output, so forgetting a filter is safe, not an injection.
"""

from __future__ import annotations

import re
from typing import Any

from coreanalyze.render.view import MAX_TEXT, clean, one_line


class MarkdownSafe(str):
    """Text already escaped for Markdown; printed as is by the Markdown templates."""


# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that can
# start emphasis, links, images, code, HTML, tables, strikethrough, math, autolinks,
# mentions and issue references on GitHub/GitLab.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&@$])")
_LEADING_LIST_NUMBER = re.compile(r"^(\d+)([.)])")
_LEADING_MARKER = re.compile(r"^([-=:])")
_BACKTICK_RUN = re.compile(r"`+")
# One table, applied one character at a time, so that no entity is escaped twice.
_HTML_ENTITIES = {c: f"&#{ord(c)};" for c in "`*_[]()~|#!\\$@{}+'\""}
_HTML_ENTITIES.update({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICK_RUN.finditer(text)), default=0)


def md_text(value: Any, limit: int = 4000) -> MarkdownSafe:
    if isinstance(value, MarkdownSafe):
        return value
    if value is None:
        return MarkdownSafe("?")
    text = one_line(value, limit).strip()
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = _LEADING_LIST_NUMBER.sub(r"\1\\\2", text)
    text = _LEADING_MARKER.sub(r"\\\1", text)
    return MarkdownSafe(text)


def md_code(value: Any, limit: int = 4000) -> MarkdownSafe:
    """An inline code span that no backtick run inside can close."""
    if value is None:
        return MarkdownSafe("?")
    text = one_line(value, limit)
    if not text.strip():
        return MarkdownSafe("?")
    ticks = "`" * (_longest_backtick_run(text) + 1)
    # A space on each side is stripped again by the renderer; needed when the content
    # starts or ends with a backtick, harmless otherwise.
    if text.startswith("`") or text.endswith("`"):
        text = f" {text} "
    return MarkdownSafe(f"{ticks}{text}{ticks}")


def md_cell_code(value: Any, limit: int = 4000) -> MarkdownSafe:
    """md_code for a GFM table cell, where a `|` ends the cell even inside a code span."""
    return MarkdownSafe(md_code(value, limit).replace("|", "\\|"))


def md_fence(value: Any, info: str = "text", limit: int = MAX_TEXT) -> MarkdownSafe:
    """A fenced code block (ending with a newline) that no content can close early.

    `limit` bounds the whole block; a list of frames, whose lines are bounded one by one,
    passes a larger one so that the culprit deep in a stack is not cut off."""
    text = clean(value, limit) if value is not None else ""
    text = text.rstrip("\n")
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return MarkdownSafe(f"{fence}{info}\n{text}\n{fence}\n")


def md_html_text(value: Any, limit: int = 400) -> MarkdownSafe:
    """Text inside raw HTML within Markdown (e.g. a <summary> line)."""
    if value is None:
        return MarkdownSafe("?")
    text = one_line(value, limit)
    return MarkdownSafe("".join(_HTML_ENTITIES.get(c, c) for c in text))
