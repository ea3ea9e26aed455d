"""The report as Markdown for GitHub/GitLab/Jira tickets (templates/report.md.j2)."""

from __future__ import annotations

import re

from ..model import Report
from .templating import markdown_environment
from .view import ReportView, build_view

_FENCE_OPEN = re.compile(r"^(`{3,})")


def render_view(view: ReportView) -> str:
    template = markdown_environment().get_template("report.md.j2")
    text = template.render(v=view, registers_block=view.fault_block())
    return _squeeze_blank_lines(text)


def _squeeze_blank_lines(text: str) -> str:
    """Drop the runs of blank lines that skipped optional sections leave behind, except
    inside fenced code blocks, whose content is kept exactly."""
    lines: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        if fence is None:
            match = _FENCE_OPEN.match(line)
            if match:
                fence = match.group(1)
            elif not line.strip():
                if lines and not lines[-1]:
                    continue
                line = ""
        elif line.strip() and set(line.strip()) == {"`"} and len(line.strip()) >= len(fence):
            fence = None
        lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def render(report: Report) -> str:
    return render_view(build_view(report))
