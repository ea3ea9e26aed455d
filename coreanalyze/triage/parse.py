"""Find every recognizable crash block in pasted text and merge them into one Report.

Parsers run in a fixed order over the same cleaned lines; each marks the lines it used,
so that a later, looser parser does not read them again (a sanitizer frame `#3 0x.. in f`
is not a gdb frame; a gdb frame's `malloc_printerr (str="free(): ...")` is not a
separate glibc message).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coreanalyze.base import model
from coreanalyze.base.errors import BadInput
from coreanalyze.triage import (
    abort_messages,
    android_tombstone,
    apport,
    asan,
    backtrace_symbols,
    c10_frames,
    chromium_log,
    context,
    coredumpctl,
    cortex_m,
    crash_lines,
    cuda_gdb,
    esp_panic,
    evidence,
    faulthandler,
    findings,
    frame_shapes,
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
    openmpi,
    pystack,
    snapshot,
    source_lines,
    tflog,
    thread_create,
    valgrind,
    windows_error,
)
from coreanalyze.triage.merge import merge
from coreanalyze.triage.text import clean
from coreanalyze.triage.versions import stated_versions

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
    # What a device's or an OS's fault handler wrote (before gdb_bt: PlatformIO's decoded
    # "#0  0x400d19c4:0x3ffb5fc0 in inflate at ..." has a gdb frame's shape).
    esp_panic.parse,
    cortex_m.parse,
    windows_error.parse,
    valgrind.parse,
    hs_err.parse,
    coredumpctl.parse,
    pystack.parse,
    faulthandler.parse,
    gdb_pybt.parse,
    tflog.parse,
    chromium_log.parse,
    openmpi.parse,
    backtrace_symbols.parse,
    lldb_bt.parse,
    macos_crash.parse,
    kernel_log.parse,
    gdb_bt.parse,
    gdb_values.parse,
    apport.parse,
    source_lines.parse,
    # Any line with a frame's shape, in a format no parser above knows.
    frame_shapes.parse,
    abort_messages.parse,
    thread_create.parse,
    crash_lines.parse,
    # What the text says without frames (rules data); reads every line.
    evidence.parse,
)


@dataclass
class TriageResult:
    report: model.Report
    abort_message: str | None
    formats: list[str]  # the formats recognized in the text, in the order they appear
    # The text's other lines as (distance from the crash's line, line, not among what ran last), for the line rules.
    context: list[tuple[int, str, bool]] = field(default_factory=list)
    # The frameless evidence rules that matched (evidence.py).
    evidence: list[evidence.Hit] = field(default_factory=list)
    # Where the process ran, where a device's fault dump says (vocabulary.Platform).
    platform: str | None = None
    # Every non-empty line of the text, with whether a parser claimed it (context.whole_text).
    whole: list[tuple[int, str, bool]] = field(default_factory=list)


def _states_a_crash(f: findings.Finding) -> bool:
    return f.signal is not None or bool(f.evidence) or (f.substantive and (any(t.frames for t in f.threads) or bool(f.messages)))


def parse_text(text: str, source_name: str = "<stdin>") -> TriageResult:
    """Parse a pasted crash report (any mix of the known formats) into the data model.

    Raises BadInput only when the text states no crash at all: no backtrace, fatal log line,
    abort message, sanitizer report, signal, verdict of a shell, IDE or job runner, or line an
    evidence rule knows (a kernel's OOM or hung-task report, strace stuck in a futex, ...).
    """
    if not isinstance(text, str):
        raise BadInput(f"{source_name}: the crash text must be text")
    cleaned = clean(text)
    lines = cleaned.lines
    claimed = bytearray(len(lines))
    found: list[findings.Finding] = []
    for parser in PARSERS:
        found.extend(parser(lines, claimed))
    # A verdict alone ("Segmentation fault (core dumped)") states a crash too: never refused.
    useful = [f for f in found if _states_a_crash(f)]
    words: list[findings.Finding] = []
    if not useful:
        # Nothing printed a verdict: the report may still tell in words what happened.
        words = evidence.parse_words(lines, claimed)
        found.extend(words)
        useful = [f for f in found if _states_a_crash(f)]
    if not useful:
        raise BadInput(f"no crash found in {source_name}: no backtrace, fatal log line, sanitizer report, signal or crash verdict")
    report, abort_message, formats = merge(found, source_name)
    report.warnings = cleaned.warnings + report.warnings
    # The versions the text states decide whether a known crash's fix reached this build.
    for key, value in stated_versions(lines).items():
        report.environment.setdefault(key, value)
    at = context.crash_line(found, len(lines))
    if words and not any(f.signal is not None or f.messages for f in found):
        # The crash is where the report says it happened ("the process hangs forever"), not the
        # last line of a script pasted below.
        at = words[0].line
    around = context.context_lines(lines, claimed, at)
    hits = [h for f in found for h in f.evidence]
    platform = next((f.platform for f in found if f.platform), None)
    return TriageResult(
        report=report, abort_message=abort_message, formats=formats, context=around, evidence=hits, platform=platform,
        whole=context.whole_text(lines, claimed, at),
    )  # fmt: skip


def _text_hang(report: model.Report, around: list[tuple[int, str, bool]], rules) -> model.Classification | None:
    """The hang verdict when the text shows a stuck process (snapshot.py), else None."""
    from coreanalyze.hang import classify_hang, hang_rules

    reason = snapshot.snapshot_reason(report, around, hang_rules())
    return classify_hang(report, None, rules, reason=reason) if reason is not None else None


def triage_text(text: str, source_name: str = "<stdin>", rules=None, *, job: bool = True) -> model.Report:
    """parse_text, then the same classifier a core goes through. The log of a job's ranks
    (job.py) is classified by its root-cause rank's lines, with the verdict in report.job."""
    from coreanalyze.classify import classify  # imported here: the classifier is optional for parsing
    from coreanalyze.classify.category import mentioned_category

    if job:
        from coreanalyze.triage.job import with_job

        return with_job(text, source_name, rules, triage_text)

    result = parse_text(text, source_name)
    report = result.report
    from coreanalyze.classify.rules import default_rules

    hang = _text_hang(report, result.context, rules)
    if hang is not None:
        report.classification = hang
    else:
        report.classification = classify(report, abort_message=result.abort_message, rules=rules, context=result.context, platform=result.platform)
        if report.classification.abort_message is None and result.abort_message is not None:
            report.classification.abort_message = result.abort_message
    c = report.classification
    before = (c.category, c.fault_kind)
    rule_set = rules if rules is not None else default_rules()
    evidence.apply(c, result.evidence, rule_set)
    if hang is None and c.category == "unknown":
        mention = mentioned_category(result.whole, rule_set, str(c.fault_kind))
        if mention is not None:
            c.category = mention.category
            c.evidence.append(f"category {mention.category}: {mention.source}")
    if hang is None and (c.category, c.fault_kind) != before:
        # The text's words settled another category or fault kind than the frames: the summary
        # and the advice are made again for what was settled (the evidence stays as it was found).
        again = classify(
            report, abort_message=c.abort_message, rules=rules, context=result.context, category=c.category, fault_kind=c.fault_kind,
            platform=result.platform,
        )  # fmt: skip
        c.summary, c.advice = again.summary, again.advice
    return report
