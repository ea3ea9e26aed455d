"""The short verdict printed on the terminal after an analysis.

What an on-call needs before opening the report: the signal and where it hit, what kind of
fault, which subsystem, which thread, the culprit, the top frames, and where the full report
is.
"""

from __future__ import annotations

from coreanalyze.base.model import Report
from coreanalyze.render.colors import Palette
from coreanalyze.render.text import frame_line, labelled
from coreanalyze.render.view import ReportView, build_view, clean, frame_rows, module_statuses, modules_differ_text, one_line

TOP_FRAMES = 5
ABORT_MESSAGE_LINES = 4


def _first_line(v: ReportView, palette: Palette) -> str:
    cls = v.classification
    parts = []
    if cls.fault_kind == "hang":
        # A snapshot of a stuck process: its signal says how the snapshot was taken (gcore's
        # SIGSTOP, a watchdog's SIGABRT), not that anything faulted.
        parts.append(palette.bad("snapshot" + (f", {v.signal_text}" if v.signal_text else "")))
    elif v.signal_text:
        sig = v.signal_text
        if v.fault_address:
            sig += f" at {v.fault_address}"
        if v.reraised_text:
            sig += f" ({v.reraised_text})"
        parts.append(palette.bad(sig))
    kind = palette.bad(one_line(cls.fault_kind or "unknown", 100))
    if cls.detail:
        kind += f" [{one_line(cls.detail, 120)}]"
    what = kind
    if cls.culprit.function:
        what += " in " + palette.name(one_line(cls.culprit.function, 200))
    what += f" ({one_line(cls.category or 'unknown', 100)}, confidence {one_line(cls.confidence or 'low', 20)})"
    parts.append(what)
    return " — ".join(parts)


def render_verdict(v: ReportView, palette: Palette, report_path: str | None) -> str:
    cls = v.classification
    out = [_first_line(v, palette)]
    if v.sender_pid is not None:
        out += labelled("sent by", f"pid {v.sender_pid}", wrap=False)
    if v.crashed:
        thread = f"{v.crashed.tid}" + (f' "{v.crashed.name}"' if v.crashed.name else "")
        if v.crashed.role:
            thread += f" ({v.crashed.role})"
        out += labelled("thread", thread, wrap=False)
    if v.culprit_text:
        out += labelled("culprit", palette.name(v.culprit_text), wrap=False)
    if v.suspect_text:
        out += labelled("suspect", v.suspect_text, wrap=False)
    if cls.abort_message:
        lines = [line for line in clean(cls.abort_message).split("\n") if line.strip()]
        shown = [one_line(line, 300) for line in lines[:ABORT_MESSAGE_LINES]]
        if len(lines) > ABORT_MESSAGE_LINES:
            more = len(lines) - ABORT_MESSAGE_LINES
            shown.append(f"... ({more} more line{'s' if more != 1 else ''} in the report)")
        for i, line in enumerate(shown):
            out += labelled("abort" if i == 0 else "", line, wrap=False)
    if cls.summary:
        out += labelled("summary", one_line(cls.summary))
    if v.launched_from_text:
        out += labelled("launched", v.launched_from_text)
    if v.caught_text:
        out += labelled("caught", v.caught_text)
    if v.module_problems:
        out += labelled(
            "modules",
            palette.warn(f"{modules_differ_text(len(v.module_problems))}; frame names may be wrong"),
            wrap=False,
        )
    crashed = v.report.crashed_thread
    if crashed is not None and crashed.frames:
        rows = frame_rows(
            crashed,
            head=TOP_FRAMES,
            tail=0,
            culprit=cls.culprit,
            suspect=cls.suspect,
            module_status=module_statuses(v.report),
        )
        for i, row in enumerate(rows):
            out += labelled("frames" if i == 0 else "", frame_line(row, palette), wrap=False)
        shown = sum(1 for row in rows if not row.is_gap)
        hidden = len(crashed.frames) - shown - sum(row.omitted for row in rows)
        if hidden > 0:
            out += labelled("", palette.dim(f"... {hidden} more frames"), wrap=False)
    if v.report.warnings:
        out += labelled("warnings", palette.warn(f"{len(v.report.warnings)} (see the report)"), wrap=False)
    if report_path:
        out += labelled("report", palette.bold(one_line(report_path)), wrap=False)
    return "\n".join(out) + "\n"


def verdict(report: Report, *, color: bool = False, report_path: str | None = None) -> str:
    return render_verdict(build_view(report), Palette(color), report_path)
