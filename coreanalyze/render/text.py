"""The report as aligned plain text (`--format text`), with ANSI colours when asked.

Every value from the core goes through view.clean/one_line first: a symbol name or a command
line holding escape sequences must not be able to drive the user's terminal.
"""

from __future__ import annotations

import textwrap

from coreanalyze.base.model import Report
from coreanalyze.render.colors import Palette
from coreanalyze.render.view import FrameRow, ReportView, ThreadView, build_view, clean, modules_differ_text, one_line

WIDTH = 100
LABEL_WIDTH = 14


def labelled(label: str, value: str, *, indent: int = 2, width: int = LABEL_WIDTH, wrap: bool = True) -> list[str]:
    """`label  value` lines with the value wrapped under itself."""
    head = " " * indent + label.ljust(width)
    if not wrap:
        return [head + value]
    body = textwrap.wrap(value, width=max(40, WIDTH - len(head)), break_on_hyphens=False) or [""]
    return [head + body[0]] + [" " * len(head) + line for line in body[1:]]


def bullets(items: list[str], *, indent: int = 2) -> list[str]:
    out = []
    for item in items:
        out += textwrap.wrap(
            one_line(item),
            width=WIDTH,
            initial_indent=" " * indent + "- ",
            subsequent_indent=" " * (indent + 2),
            break_on_hyphens=False,
        ) or [" " * indent + "-"]
    return out


def frame_line(row: FrameRow, palette: Palette) -> str:
    text = row.plain()
    if row.culprit:
        return palette.bad(text)
    if row.suspect or row.unreliable:
        return palette.warn(text)
    if row.is_python:
        return palette.python(text)
    if row.is_gap:
        return palette.dim(text)
    return text


def thread_lines(tv: ThreadView, palette: Palette, *, indent: int = 2) -> list[str]:
    pad = " " * indent
    if not tv.rows:
        return [pad + palette.dim("(no frames recovered)")]
    out = []
    for row in tv.rows:
        out.append(pad + frame_line(row, palette))
        if row.source:
            out.append(pad + " " * 10 + palette.dim(one_line(row.source)))
        for name, value in row.locals:
            out.append(pad + " " * 10 + palette.dim(f"{one_line(name, 200)} = {one_line(value, 400)}"))
    return out


def _section(title: str, palette: Palette) -> list[str]:
    return ["", palette.heading(title), palette.heading("-" * len(title))]


def render_view(v: ReportView, palette: Palette) -> str:
    cls = v.classification
    title = one_line(v.title)
    out = [palette.bold(title), palette.bold("=" * min(len(title), WIDTH)), ""]

    kind = palette.bad(one_line(cls.fault_kind or "unknown", 100))
    if cls.detail:
        kind += f" ({one_line(cls.detail, 200)})"
    out += labelled("Fault kind", kind, wrap=False)
    out += labelled("Category", one_line(f"{cls.category or 'unknown'} (confidence {cls.confidence or 'low'})", 200))
    if v.signal_text:
        sig = v.signal_text + (f" at {v.fault_address}" if v.fault_address else "")
        if v.sender_pid is not None:
            sig += f", sent by pid {v.sender_pid}"
        if v.reraised_text:
            sig += f", {v.reraised_text}"
        out += labelled("Signal", sig)
    if v.crashed:
        out += labelled("Thread", f"{v.crashed.tid}" + (f' "{v.crashed.name}"' if v.crashed.name else "")
                        + (f" ({v.crashed.role})" if v.crashed.role else ""))
    if v.culprit_text:
        out += labelled("Culprit", palette.name(v.culprit_text), wrap=False)
    if v.suspect_text:
        out += labelled("Suspect", v.suspect_text, wrap=False)
    if cls.op:
        out += labelled("Op", one_line(cls.op))
    if cls.signature:
        out += labelled("Signature", one_line(cls.signature), wrap=False)
    if v.launched_from_text:
        out += labelled("Launched from", v.launched_from_text)
    if cls.summary:
        out += labelled("Summary", one_line(cls.summary))
    if v.module_problems:
        names = ", ".join(f"{one_line(m.path.rsplit('/', 1)[-1])} ({m.status})" for m in v.module_problems[:6])
        out += labelled("Modules", palette.warn(f"{modules_differ_text(len(v.module_problems))}: {names}"), wrap=False)

    if v.advice:
        out += _section("What to do", palette) + bullets(v.advice)
    if v.evidence:
        out += _section("Evidence", palette) + bullets(v.evidence)
    if v.hang_threads:
        out += _section("Where the threads wait", palette) + bullets(v.hang_threads)
    if v.gpu_facts:
        out += _section("What the GPU did", palette)
        for label, value in v.gpu_facts:
            out += labelled(label, value, width=24)

    if cls.op_instance:
        from coreanalyze.opinstance.view import instance_lines

        out += _section("Op instance", palette) + ["  " + one_line(line) for line in instance_lines(cls.op_instance)]
        if cls.op_instance.reproducer:
            out += _section("Reproduce (untested)", palette)
            out += ["  " + line for line in clean(cls.op_instance.reproducer).rstrip("\n").split("\n")]
    elif cls.op_instance_unread:
        out += labelled("Op instance", "could not be read: " + one_line(cls.op_instance_unread))

    if cls.abort_message:
        out += _section("Abort message", palette)
        out += ["  " + line for line in clean(cls.abort_message).rstrip("\n").split("\n")]

    out += _section(one_line(v.crashed_title), palette)
    if v.crashed:
        out += thread_lines(v.crashed, palette)
    else:
        text = v.no_crashed_thread_text.rstrip(".")
        out.append("  " + palette.dim(f"({text[:1].lower()}{text[1:]})"))

    block = v.fault_block()
    if block:
        out += _section("Faulting instruction and registers", palette)
        out += ["  " + line if line else "" for line in block.split("\n")]

    if v.others:
        out += _section(f"Other threads ({len(v.others) + v.others_omitted})", palette)
        for tv in v.others:
            facts = [tv.frames_text]
            if tv.role:
                facts.insert(0, tv.role)
            if tv.gil:
                facts.insert(1 if tv.role else 0, tv.gil)
            out.append("  " + palette.bold(tv.title) + palette.dim(" · " + " · ".join(facts)))
            out += thread_lines(tv, palette, indent=4)
        if v.others_omitted:
            out.append(f"  ... {v.others_omitted} more threads are in the JSON report")

    if v.modules:
        counts = one_line(", ".join(f"{n} {s}" for s, n in sorted(v.module_counts.items())), 200)
        out += _section(f"Modules ({len(v.modules)}: {counts})", palette)
        status_width = max(len(one_line(m.status, 20)) for m in v.modules)
        for m in v.modules:
            status = one_line(m.status, 20).ljust(status_width)
            if m.status.unreliable:
                status = palette.bad(status)
            line = f"  {status}  {one_line(m.path)}"
            if m.build_id:
                line += f"  {one_line(m.build_id, 80)}"
            if m.local_path and m.local_path != m.path:
                line += f"  -> {one_line(m.local_path)}"
            elif m.local_path is None and m.not_found and "--fetch: " in m.not_found:
                # Why --fetch left it missing (HTML and Markdown show where it was looked for, too).
                line += f"  ({one_line(m.not_found[m.not_found.index('--fetch: '):], 300)})"
            out.append(line)

    if v.environment:
        out += _section("Environment", palette)
        key_width = min(28, max(len(one_line(k, 200)) for k, _ in v.environment) + 2)
        for key, value in v.environment:
            out += labelled(one_line(key, 200), one_line(value), width=key_width, wrap=False)

    if v.warnings:
        out += _section("Warnings", palette) + [palette.warn(line) for line in bullets(v.warnings)]

    if v.core_facts:
        out += _section("Core", palette)
        label_width = max(len(label) for label, _ in v.core_facts) + 2
        for label, value in v.core_facts:
            out += labelled(label, value, width=label_width, wrap=False)

    return "\n".join(out) + "\n"


def render(report: Report, *, color: bool = False) -> str:
    return render_view(build_view(report), Palette(color))
