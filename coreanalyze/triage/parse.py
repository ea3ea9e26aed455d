"""Find every recognizable crash block in pasted text and merge them into one Report.

Parsers run in a fixed order over the same cleaned lines; each marks the lines it used,
so that a later, looser parser does not read them again (a sanitizer frame `#3 0x.. in f`
is not a gdb frame; a gdb frame's `malloc_printerr (str="free(): ...")` is not a
separate glibc message).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import model
from ..errors import BadInput
from . import (
    abort_messages,
    android_tombstone,
    apport,
    asan,
    backtrace_symbols,
    c10_frames,
    chromium_log,
    coredumpctl,
    cuda_gdb,
    faulthandler,
    findings,
    gdb_bt,
    gdb_pybt,
    gdb_values,
    gpu_log,
    gpu_sanitizer,
    gpu_traceback,
    gpu_xid,
    hs_err,
    kernel_log,
    lldb_bt,
    macos_crash,
    oom_kill,
    pystack,
    source_lines,
    tflog,
    valgrind,
)
from .merge import merge
from .text import clean

# Most specific formats first.
PARSERS = (
    gpu_sanitizer.parse,
    gpu_traceback.parse,
    gpu_log.parse,
    cuda_gdb.parse,
    gpu_xid.parse,
    oom_kill.parse,
    c10_frames.parse,
    asan.parse,
    android_tombstone.parse,
    valgrind.parse,
    hs_err.parse,
    coredumpctl.parse,
    pystack.parse,
    faulthandler.parse,
    gdb_pybt.parse,
    tflog.parse,
    chromium_log.parse,
    backtrace_symbols.parse,
    lldb_bt.parse,
    macos_crash.parse,
    kernel_log.parse,
    gdb_bt.parse,
    gdb_values.parse,
    apport.parse,
    source_lines.parse,
    abort_messages.parse,
)


@dataclass
class TriageResult:
    report: model.Report
    abort_message: str | None
    formats: list[str]  # the formats recognized in the text, in the order they appear


def parse_text(text: str, source_name: str = "<stdin>") -> TriageResult:
    """Parse a pasted crash report (any mix of the known formats) into the data model.

    Raises BadInput when the text holds no backtrace, fatal log line, abort message or
    sanitizer report.
    """
    if not isinstance(text, str):
        raise BadInput(f"{source_name}: the crash text must be text")
    cleaned = clean(text)
    lines = cleaned.lines
    claimed = bytearray(len(lines))
    found: list[findings.Finding] = []
    for parser in PARSERS:
        found.extend(parser(lines, claimed))
    useful = [f for f in found if f.substantive and (any(t.frames for t in f.threads) or f.messages or f.signal)]
    if not useful:
        raise BadInput(f"no backtrace, fatal log line or sanitizer report found in {source_name}")
    report, abort_message, formats = merge(found, source_name)
    report.warnings = cleaned.warnings + report.warnings
    return TriageResult(report=report, abort_message=abort_message, formats=formats)


def triage_text(text: str, source_name: str = "<stdin>", rules=None) -> model.Report:
    """parse_text, then the same classifier a core goes through."""
    from ..classify import classify  # imported here: the classifier is optional for parsing

    result = parse_text(text, source_name)
    report = result.report
    report.classification = classify(report, abort_message=result.abort_message, rules=rules)
    if report.classification.abort_message is None and result.abort_message is not None:
        report.classification.abort_message = result.abort_message
    return report
