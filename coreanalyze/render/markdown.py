"""The report as Markdown for GitHub/GitLab/Jira tickets (templates/report.md.j2).

A ticket field has a size limit (Jira: 32,767 characters; GitHub: 65,536), and a report of a
TensorFlow process easily exceeds it with every thread and module. The Markdown is therefore
rendered with progressively tighter limits (fewer frames of other threads, then none, then
fewer frames of the crashing thread) until it fits, and cut at a block boundary as a last
resort. The culprit frame and the verdict are kept at every level.
"""

from __future__ import annotations

import re

from coreanalyze.base.model import Report
from coreanalyze.render.templating import markdown_environment
from coreanalyze.render.upstream import upstream_issue
from coreanalyze.render.view import ReportView, ViewLimits, build_view

# Under Jira's 32,767-character field limit, with room for the reporter's own words.
TICKET_LIMIT = 30_000

# A block of frames is bounded line by line already (view.MAX_FUNCTION); this only stops
# an absurd core, and the ticket budget above applies anyway.
FRAMES_BLOCK_LIMIT = 2_000_000

# Module rows listed in the table; the rest are counted.
MAX_MODULE_ROWS = 40

# Tried in order until the Markdown fits in TICKET_LIMIT.
LEVELS = (
    ViewLimits(),
    ViewLimits(other_head=12, other_tail=2, max_other_threads=64),
    ViewLimits(crashed_head=48, crashed_tail=8, other_head=4, other_tail=0, max_other_threads=32, value_chars=1000),
    ViewLimits(crashed_head=24, crashed_tail=4, other_head=0, other_tail=0, max_other_threads=32, value_chars=300),
    ViewLimits(crashed_head=8, crashed_tail=2, other_head=0, other_tail=0, max_other_threads=8, value_chars=120),
)

_FENCE_OPEN = re.compile(r"^(`{3,})")
CUT_NOTE = "_Cut to fit in a ticket; the HTML and JSON reports have everything._"


def render_view(view: ReportView, *, compacted: bool = False) -> str:
    listed = view.key_modules[:MAX_MODULE_ROWS]
    listed_ids = {id(m) for m in listed}
    unlisted: dict[str, int] = {}
    for m in view.modules:
        if id(m) not in listed_ids:
            unlisted[m.status] = unlisted.get(m.status, 0) + 1
    template = markdown_environment().get_template("report.md.j2")
    text = template.render(
        v=view,
        registers_block=view.fault_block(),
        listed_modules=listed,
        unlisted_counts=unlisted,
        compacted=compacted,
        frames_limit=FRAMES_BLOCK_LIMIT,
        upstream=upstream_issue(view.report),
    )
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
        elif _closes(line, fence):
            fence = None
        lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {"`"} and len(stripped) >= len(fence)


def cut_to_fit(text: str, limit: int) -> str:
    """The longest head of `text` that fits in `limit` characters with its open code fence
    and <details> closed and a note saying it was cut."""
    budget = limit - len(CUT_NOTE) - 64  # room for the closing fence, </details> and blank lines
    kept: list[str] = []
    size = 0
    fence: str | None = None
    open_details = 0
    for line in text.splitlines():
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
        if fence is None:
            match = _FENCE_OPEN.match(line)
            if match:
                fence = match.group(1)
            else:
                open_details += line.count("<details>") - line.count("</details>")
        elif _closes(line, fence):
            fence = None
    if fence is not None:
        kept.append(fence)
    kept.extend(["", "</details>"] * max(0, open_details))
    kept.extend(["", CUT_NOTE])
    return "\n".join(kept) + "\n"


def render_for_ticket(report: Report, limit: int = TICKET_LIMIT) -> str:
    text = ""
    for level, limits in enumerate(LEVELS):
        text = render_view(build_view(report, limits), compacted=level > 0)
        if len(text) <= limit:
            return text
    return cut_to_fit(text, limit)


def render(report: Report) -> str:
    return render_for_ticket(report)
