"""classify(report) -> Classification: the steps of this package run in order on one report.

frames -> culprit (skip lists) -> custom-op frames -> category (rules) -> fault kind -> op ->
signature -> summary -> advice -> confidence. Each step is its own module; this one only wires
them together and writes down the evidence.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from coreanalyze.base.model import Classification, Culprit, GpuFault, Report, SignalInfo, Thread
from coreanalyze.base.pyfiles import is_library_file
from coreanalyze.base.vocabulary import Confidence, FaultKind, Platform
from coreanalyze.classify.advice import ProcessFacts, advise
from coreanalyze.classify.category import decide_category
from coreanalyze.classify.culprit import CulpritPick, pick_culprit
from coreanalyze.classify.customop import find_custom_op, is_tensorflow_frame, loaded_custom_libraries
from coreanalyze.classify.device import device_signature, device_summary, gpu_facts, host_site, oom_facts
from coreanalyze.classify.faultkind import (
    cpu_feature_for,
    exception_type,
    fault_kind_from_views,
    instruction_text,
    report_class_kind,
    reraise_evidence,
    short_message,
    signal_name,
    signal_origin,
    thrown_exception,
)
from coreanalyze.classify.frames import FrameView, build_views, same_run
from coreanalyze.classify.frameworks import loaded_frameworks
from coreanalyze.classify.names import normalize_function, short_name
from coreanalyze.classify.op import find_op
from coreanalyze.classify.rules import RuleSet, default_rules
from coreanalyze.classify.signature import make_signature
from coreanalyze.classify.summary import SummaryFacts, summarize

ROLE_WORDS = {
    "trampoline": "signal handler",
    "abort": "abort path",
    "logging": "logging",
    "libc": "libc primitives",
    "runtime": "plumbing",
    "allocator": "allocator",
    "checked": "checked accessor",
}


def _python_call_site(views, culprit) -> FrameView | None:
    """The innermost Python frame of the user's own code under the culprit (else the innermost)."""
    if culprit is None:
        return None
    python = [v for v in views if v.python and v.position > culprit.position]
    return next((v for v in python if not is_library_file(v.frame.file)), python[0] if python else None)


def _crashed_thread(report: Report) -> Thread | None:
    thread = report.crashed_thread
    if thread is not None:
        return thread
    # A pasted report often has one thread and does not say it crashed.
    return next((t for t in report.threads if t.frames), None)


def _display_function(v: FrameView, rules: RuleSet) -> str | None:
    if v.python:
        return v.name or None
    if not v.frame.function and not v.frame.raw_function:
        return None
    readable = rules.fold(normalize_function(v.frame.function or v.frame.raw_function, keep_templates=True))
    return readable or None


def _culprit_of(v: FrameView | None, rules: RuleSet) -> Culprit:
    if v is None:
        return Culprit()
    module = v.frame.file if v.python else v.module_path
    return Culprit(function=_display_function(v, rules), module=module, frame_index=v.index)


def _skipped_evidence(pick: CulpritPick) -> str | None:
    skipped = [*pick.handler_frames, *pick.skipped]
    if not skipped or pick.view is None:
        return None
    roles: list[str] = []
    for v in skipped:
        word = ROLE_WORDS.get(v.role or "", "noise")
        if word not in roles:
            roles.append(word)
    first, last = skipped[0].index, skipped[-1].index
    span = f"#{first}" if first == last else f"#{first}-#{last}"
    return f"skipped frames {span} ({', '.join(roles)}) above the culprit"


def _confidence(category: str, kind: str, pick: CulpritPick, decision_score: int | None, signal: str | None) -> Confidence:
    if category == "unknown" or pick.view is None:
        return Confidence.LOW
    reliable = all(v.frame.reliable for v in [pick.view, *pick.below[:3]])
    strong = decision_score is not None and decision_score >= 40
    if signal and kind != FaultKind.UNKNOWN and pick.native and pick.view.name and strong and reliable and not pick.fallback:
        return Confidence.HIGH
    return Confidence.MEDIUM


def _gpu_host(report: Report, thread: Thread | None, category: str, kind: str, pick: CulpritPick):
    """(the host thread's GPU call, the sentence the summary gains, the GPU library whose own
    thread crashed): for a crash in the GPU stack, or inside a GPU call."""
    from coreanalyze.classify.gpuhost import find_host_call, host_sentence

    call = find_host_call(report)
    if call is None:
        return None, None, None
    in_call = thread is not None and call.tid == thread.tid
    if not in_call and category != "gpu-driver" and kind != FaultKind.GPU_EXCEPTION:
        return None, None, None
    library = None
    if pick.view is not None and not pick.view.python and thread is not None and not any(f.kind == "python" for f in thread.frames):
        library = pick.view.module_base or None
    return call, host_sentence(call, thread, library), library


def _with_host_api(gpu: GpuFault | None, host) -> GpuFault | None:
    """classification.gpu with the host thread's call as its api (unless the facts named one)."""
    if host is None:
        return gpu
    return replace(gpu, api=gpu.api or host.api) if gpu is not None else GpuFault(api=host.api)


def _environment_names(report: Report) -> frozenset[str] | None:
    names = report.environment.get("environment_variable_names") if isinstance(report.environment, dict) else None
    return frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list) else None


def classify(
    report: Report, *, abort_message: str | None = None, rules: RuleSet | None = None, context: Sequence[tuple[int, str, bool]] = (),
    category: str | None = None, fault_kind: str | None = None, platform: str | None = None,
) -> Classification:  # fmt: skip
    """context: a pasted text's lines other than frames, as (distance from the crash's line, line).
    category, fault_kind: what a text's own words settled (a watchdog's verdict, a stated error:
    coreanalyze.triage.evidence), in place of what the frames and the signal say, so that the
    summary and the advice speak of it. platform: a microcontroller's, where a device's fault dump
    said so (vocabulary.Platform; default: a process of an operating system)."""
    from coreanalyze.classify.gpuhost import evidence_line

    rules = rules or default_rules()
    abort_message = abort_message or report.classification.abort_message
    thread = _crashed_thread(report)
    frames = thread.frames if thread is not None else []
    registers = thread.registers if thread is not None else {}
    signal = report.core.signal if report.core is not None else SignalInfo()
    pid = report.core.pid if report.core is not None else None
    sig = signal_name(signal)

    views = build_views(frames, report.modules, rules)
    pick = pick_culprit(views, rules)
    custom = find_custom_op(views, pick, report.modules, rules)
    reported_kind = report_class_kind(report.classification.detail, rules)
    kind, kind_evidence = fault_kind_from_views(
        signal, abort_message, views, pick, registers, None, pid=pid, fault_instruction=report.fault_instruction, rules=rules,
        detail=report.classification.detail, gpu=report.classification.gpu, oom=report.classification.oom,
    )
    if fault_kind is not None:
        kind = FaultKind(fault_kind)
    decision = decide_category(
        views, pick, abort_message, custom, rules,
        allocator_evidence=reported_kind in (None, FaultKind.HEAP_CORRUPTION, FaultKind.OUT_OF_MEMORY), fault_kind=kind, context=context,
    )
    if category is not None:
        decision = replace(decision, category=category)
    detail = report.classification.detail
    if detail is None and kind in (FaultKind.UNCAUGHT_EXCEPTION, FaultKind.OUT_OF_MEMORY):
        detail = exception_type(abort_message) or thrown_exception(views, rules)
    gpu = gpu_facts(kind, report.classification.gpu, abort_message)
    oom = oom_facts(kind, report.classification.oom, abort_message, detail)
    op = find_op(views, pick, custom, rules)

    evidence: list[str] = [*reraise_evidence(signal), *kind_evidence]
    if abort_message:
        evidence.append(f"abort message: {' '.join(abort_message.split())[:300]}")
    if pick.view is not None:
        where = f"culprit: frame #{pick.view.index} {pick.view.label}"
        if pick.view.module_base:
            where += f" in {pick.view.module_base}"
        if pick.fallback:
            where += " (every frame is on a skip list; this is the least noisy one)"
        evidence.append(where)
    skipped = _skipped_evidence(pick)
    if skipped:
        evidence.append(skipped)
    if pick.allocator_frames:
        evidence.append("allocator frames on top of the crash: " + ", ".join(v.label for v in pick.allocator_frames[:4]))
    evidence.extend(decision.evidence())
    if custom is not None and (decision.winner is None or decision.winner.view is not custom.view or decision.winner.rule is not None):
        evidence.append(f"custom-op code: frame #{custom.view.index} {custom.view.label} ({custom.library}): {custom.reason}")
    if op is not None:
        evidence.append(f"op: {op.name}" + (f" from frame #{op.view.index} {op.view.label}" if op.view is not None else ""))
    unreliable = sorted({v.module_base for v in [pick.view, *pick.below] if v is not None and not v.frame.reliable and v.module_base})
    if unreliable:
        evidence.append("frames in " + ", ".join(unreliable) + " may be misnamed: the library here differs from the crashed process's")
    if not frames:
        evidence.append("the crashing thread has no frames")

    culprit = _culprit_of(pick.view, rules)
    suspect = None
    if custom is not None and custom.view is not pick.view:
        suspect = Culprit(function=_display_function(custom.view, rules), module=custom.library_path, frame_index=custom.view.index)

    host, host_text, library_thread = _gpu_host(report, thread, decision.category, kind, pick)
    if host is not None:
        evidence.append(evidence_line(host))

    origin = signal_origin(signal, pid, any(v.role == "abort" for v in pick.skipped))
    insn = instruction_text(report.fault_instruction)
    feature = cpu_feature_for(insn, rules)
    # The next frame that says something new: not more of a stripped library's unnamed code.
    caller = next((v for v in pick.below if pick.view is None or not same_run(pick.view, v)), None)
    tf_caller = None
    if custom is not None:
        tf_caller = next((v for v in views if not v.python and v.position > custom.view.position and is_tensorflow_frame(v, rules)), None)
    summary = device_summary(kind, gpu, oom, sig, host_site(views, pick.view)) or summarize(
        SummaryFacts(
            signal=sig,
            fault_kind=kind,
            category=decision.category,
            culprit=pick.view,
            caller=caller,
            custom=custom,
            op=op,
            abort_message=short_message(abort_message),
            address=signal.address,
            sender=origin.sender or (f"pid {signal.sender_pid}" if signal.sender_pid is not None else None),
            instruction=insn,
            feature=feature[0] if feature else None,
            python_only=pick.view is not None and pick.view.python,
            tf_caller=tf_caller,
            python_site=_python_call_site(views, pick.view),
            bad_jump_pc=pick.bad_jump.frame.pc if pick.bad_jump is not None else None,
            detail=detail,
        )
    )
    if host_text:
        summary = f"{summary} {host_text}"
    if op is not None and op.kind == "dataset" and op.name not in summary and op.view is not None:
        # A summary that names the failing helper (an allocation, a read) but not the pipeline.
        summary = f"{summary.rstrip()} It ran in tf.data dataset op {op.name} ({short_name(op.view.name)})."

    values = {
        "culprit": short_name(pick.view.name) if pick.view is not None and pick.view.name else None,
        "module": pick.view.module_base if pick.view is not None else None,
        "library": custom.library if custom is not None else None,
        "library_path": custom.library_path if custom is not None else None,
        "op": op.name if op is not None else None,
        "kernel": short_name(op.view.name) if op is not None and op.view is not None and op.view.name else (op.name if op is not None else None),
        "abort_message": short_message(abort_message),
        "sender_pid": str(signal.sender_pid) if signal.sender_pid is not None else None,
        "instruction": insn,
        "feature": feature[0] if feature and not feature[1] else None,
        "address": f"0x{signal.address:x}" if signal.address is not None else None,
        "signal": sig,
        "exception": (detail if kind == FaultKind.UNCAUGHT_EXCEPTION else None) or thrown_exception(views, rules),
        "loaded_custom_ops": ", ".join(loaded_custom_libraries(report.modules, rules)) or None,
        "api": host.api if host is not None else None,
    }
    facts = ProcessFacts(
        loaded=loaded_frameworks(report, rules),
        host_call=host.role if host is not None and thread is not None and host.tid == thread.tid else None,
        signal_code=signal.code_name,
        platform=platform or Platform.HOSTED,
        environment=_environment_names(report),
    )
    advice = advise(decision.category, kind, custom is not None, values, rules, facts)

    score = decision.winner.score if decision.winner is not None else None
    return Classification(
        category=decision.category,
        fault_kind=kind,
        culprit=culprit,
        signature=device_signature(kind, gpu, oom)
        or make_signature(sig, views, pick, rules, abort_message, host_api=host.api if host is not None and library_thread else None),
        summary=summary,
        evidence=evidence,
        advice=advice,
        abort_message=abort_message,
        confidence=_confidence(decision.category, kind, pick, score, sig),
        suspect=suspect,
        op=op.name if op is not None else None,
        detail=detail,
        gpu=_with_host_api(gpu, host),
        oom=oom,
    )



