"""Render one Report: HTML, Markdown, text and JSON from the same model, plus the verdict.

Renderers are pure functions of the report; the CLI decides on colour (colors.color_wanted)
and where output goes (pager.page for a terminal).
"""

from __future__ import annotations

from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import Report
from coreanalyze.render import html, jsonout, markdown, text
from coreanalyze.render.colors import color_wanted
from coreanalyze.render.pager import page
from coreanalyze.render.verdict_text import verdict

FORMATS = ("html", "json", "text", "markdown")


def render(report: Report, fmt: str, *, color: bool = False) -> str:
    """The report in one of FORMATS; `color` only affects "text"."""
    if fmt == "html":
        return html.render(report)
    if fmt == "json":
        return jsonout.render(report)
    if fmt == "text":
        return text.render(report, color=color)
    if fmt == "markdown":
        return markdown.render(report)
    raise BadInput(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")


__all__ = ["FORMATS", "color_wanted", "page", "render", "verdict"]
