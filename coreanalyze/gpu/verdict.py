"""The verdict for a GPU exception: fault kind gpu-exception, classification.gpu, the category of
the faulting kernel, a signature anchored on the exception and the kernel, the summary, the
evidence and the advice.

From the GPU core when there is one; without it, when the stacks show that the CUDA driver
ended the process after a GPU exception (its own thread raising SIGABRT, with GPU core dumps
asked for in the environment), the verdict says the GPU faulted, with lower confidence, and how
to get the GPU core next time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from coreanalyze.base.model import Classification, Culprit, GpuFault, Report
from coreanalyze.base.vocabulary import Confidence, FaultKind
from coreanalyze.classify.advice import advise
from coreanalyze.classify.device import device_signature
from coreanalyze.classify.gpuhost import call_words, find_host_call, thread_words
from coreanalyze.classify.names import normalize_function
from coreanalyze.classify.rules import RuleSet, default_rules
from coreanalyze.classify.signature import hashed_signature
from coreanalyze.gpu.coredump import GpuCoreDump
from coreanalyze.gpu.locate import ENABLE_VARIABLE, GpuCoreLookup
from coreanalyze.gpu.rules import GpuRules, gpu_rules
from coreanalyze.gpu.view import triple

MAX_DRIVER_FRAMES = 16  # how deep in the crashing thread the driver's call to abort() may be
ABORT_FUNCTIONS = frozenset({"abort", "GI_abort"})
GPU_CORE_STATUS_READ = "read"
GPU_CORE_STATUS_MISSING = "not-found"
GPU_CORE_STATUS_UNREADABLE = "unreadable"
# Evidence of the CPU-side classification that the GPU verdict replaces.
_SUPERSEDED = ("culprit: ", "category ", "skipped frames ", "SIGABRT with no ")
_SHARED_OBJECT_VERSION = re.compile(r"\.so(\.\d+)*$")


@dataclass(frozen=True)
class DriverAbort:
    tid: int | None
    frame_index: int
    module: str  # base name


def kernel_key(kernel: str | None) -> str | None:
    """The kernel as signatures name it: no return type, parameters or template arguments."""
    if not kernel:
        return None
    return normalize_function(kernel) or kernel


def fault_from_dump(dump: GpuCoreDump, previous: GpuFault | None = None) -> GpuFault:
    first = dump.first
    kernel = dump.kernel
    device = dump.device(first.device) if first is not None else None
    offset = None
    if first is not None and kernel is not None and kernel.entry is not None and first.pc is not None and kernel.pc_function is None:
        delta = first.pc - kernel.entry
        if 0 <= delta < (kernel.size or 1 << 32):
            offset = delta
    return GpuFault(
        exception=first.exception if first else None,
        kernel=kernel.name if kernel else None,
        device=first.device if first else None,
        sm=first.sm if first else None,
        warp=first.warp if first else None,
        lane=first.lane if first else None,
        pc=first.pc if first else None,
        grid=first.grid if first else None,
        block=list(first.block) if first and first.block else None,
        thread=list(first.thread) if first and first.thread else None,
        api=previous.api if previous else None,
        gpu_core=dump.path,
        device_name=device.name if device else None,
        sm_arch=device.sm_arch if device else None,
        kernel_offset=offset,
        function=kernel.pc_function if kernel else None,
        function_offset=kernel.pc_function_offset if kernel else None,
        gpu_core_status=GPU_CORE_STATUS_READ,
    )


def driver_abort(report: Report, rules: GpuRules | None = None) -> DriverAbort | None:
    """The CUDA driver's frame under a SIGABRT of the crashing thread, if the driver raised it."""
    rules = rules or gpu_rules()
    core = report.core
    if core is None or not (core.signal.name == "SIGABRT" or core.signal.number == 6):
        return None
    if core.signal.sender_pid is not None and core.pid is not None and core.signal.sender_pid != core.pid:
        return None  # sent by another process (a watchdog): not the driver's own abort
    thread = report.crashed_thread
    if thread is None:
        return None
    frames = thread.frames[:MAX_DRIVER_FRAMES]
    for above, frame in zip(frames, frames[1:]):
        # abort() called by the driver itself; a signal merely delivered while the driver ran
        # (a watchdog's, re-raised by a handler) has no abort() above the driver's frame.
        if (above.function or "").lstrip("_") in ABORT_FUNCTIONS and frame.module and rules.driver_modules.search(frame.module):
            return DriverAbort(thread.tid, frame.index, os.path.basename(frame.module))
    return None


def dumps_were_enabled(report: Report, lookup: GpuCoreLookup | None) -> str | None:
    """Why the driver was set to write a GPU core on an exception, or None."""
    if lookup is not None and lookup.enabled:
        return f"{ENABLE_VARIABLE}=1 in the process's environment: on a GPU exception the driver writes a GPU core, then aborts"
    debugger = next((m.path for m in report.modules if "libcudadebugger.so" in os.path.basename(m.path)), None)
    if debugger:
        return f"the driver's {os.path.basename(debugger)} is loaded: GPU core dumps (or a GPU debugger) were on"
    return None


def _where(fault: GpuFault) -> str:
    device = f"device {fault.device}" if fault.device is not None else "device ?"
    parts = [device]
    for label, value in (("SM", fault.sm), ("warp", fault.warp), ("lane", fault.lane)):
        if value is not None:
            parts.append(f"{label} {value}")
    if fault.block is not None:
        parts.append(f"block {triple(fault.block)}")
    if fault.thread is not None:
        parts.append(f"thread {triple(fault.thread)}")
    return ", ".join(parts)


def _pc_text(fault: GpuFault) -> str | None:
    key = kernel_key(fault.kernel)
    if fault.function and fault.function_offset is not None:
        return f"{kernel_key(fault.function)}+0x{fault.function_offset:x}"
    if key and fault.kernel_offset is not None:
        return f"{key}+0x{fault.kernel_offset:x}"
    return f"PC 0x{fault.pc:x}" if fault.pc is not None else None


def _host_text(report: Report, abort: DriverAbort | None, fault: GpuFault) -> str:
    sentences = []
    if abort is not None:
        sentences.append(f"the CUDA driver then ended the process (SIGABRT from thread {abort.tid}, in {abort.module})")
    call = find_host_call(report)
    crashed = report.crashed_thread
    if call is not None and (crashed is None or call.tid != crashed.tid):
        # Where the user stands, in the words of the host side's verdict (gpu.host).
        sentences.append(f"{thread_words(call)} was {call_words(call)}")
    return "; ".join(sentences)


def _summary(report: Report, fault: GpuFault, abort: DriverAbort | None) -> str:
    key = kernel_key(fault.kernel)
    text = f"GPU exception {fault.exception or '(unknown)'}" + (f" in kernel {key}" if key else "")
    text += f" ({_where(fault)})"
    pc = _pc_text(fault)
    if pc:
        text += f" at {pc}"
    host = _host_text(report, abort, fault)
    return text + (f"; {host}." if host else ".")


def _evidence(dump: GpuCoreDump, fault: GpuFault) -> list[str]:
    device = ", ".join(p for p in (fault.device_name, fault.sm_arch) if p)
    lines = [f"GPU core {dump.path}: {fault.exception} on device {fault.device}" + (f" ({device})" if device else "")
             + (f", SM {fault.sm}" if fault.sm is not None else "") + (f", warp {fault.warp}, lane {fault.lane}" if fault.warp is not None else "")]
    if dump.faulting_lanes > 1:
        lines.append(f"{dump.faulting_lanes} lanes in {dump.faulting_warps} warp{'s' if dump.faulting_warps != 1 else ''} carry the exception; the first is shown")
    kernel = dump.kernel
    if kernel is not None and kernel.name:
        launch = f"grid {fault.grid}" if fault.grid is not None else "its grid"
        if kernel.grid_dim and kernel.block_dim:
            launch += f", launched <<<{triple(kernel.grid_dim)},{triple(kernel.block_dim)}>>>"
        lines.append(f"kernel {kernel.name} ({launch}), named by the symbol table of its module image in the GPU core")
    elif fault.exception:
        lines.append("the faulting kernel's name is not in the GPU core (no module image holds its entry)")
    if fault.pc is not None:
        line = f"the exception was raised at PC 0x{fault.pc:x}"
        if fault.function:
            line += f" ({_pc_text(fault)}), in device function {fault.function} called by the kernel"
        elif fault.kernel_offset is not None:
            line += f" ({_pc_text(fault)})"
        lines.append(line)
    if dump.driver_version:
        lines.append(f"written by NVIDIA driver {dump.driver_version}" + (f" (CUDA {dump.cuda_version})" if dump.cuda_version else ""))
    return lines


def _advice(category: str, fault: GpuFault, extra: list[str], rules: RuleSet, grules: GpuRules) -> list[str]:
    values = {
        "kernel": kernel_key(fault.kernel) or "the kernel",
        "where": _pc_text(fault) or _where(fault),
        "block": triple(fault.block),
        "thread": triple(fault.thread),
    }
    lines = [line.format_map(values) for line in grules.advice_for(fault.exception)] + extra
    for line in advise(category, FaultKind.GPU_EXCEPTION, False, {"exception": fault.exception, "kernel": fault.kernel}, rules):
        if ENABLE_VARIABLE in line:
            continue  # how to get the GPU core: said above, for this case
        if line not in lines:
            lines.append(line)
    return lines


def _signature(fault: GpuFault, abort: DriverAbort | None) -> str:
    """As a GPU text's (classify.device): the exception and the kernel, so that a GPU core and
    the cuda-gdb or compute-sanitizer output of the same fault group together. Without the
    GPU core, the host's call (or the driver library) stands where the kernel would."""
    if fault.exception or fault.kernel:
        return device_signature(FaultKind.GPU_EXCEPTION, fault, None) or ""
    anchor = f"host {fault.api}" if fault.api else (_SHARED_OBJECT_VERSION.sub(".so", abort.module) if abort else "no kernel")
    return hashed_signature([FaultKind.GPU_EXCEPTION, "unknown exception", anchor])


def _classification(
    report: Report, fault: GpuFault, *, evidence: list[str], advice_extra: list[str], confidence: Confidence,
    abort: DriverAbort | None, rules: RuleSet, grules: GpuRules,
) -> Classification:  # fmt: skip
    previous = report.classification
    rule = grules.kernel_rule(fault.kernel)
    category = rule.category if rule else grules.default_category
    key = kernel_key(fault.kernel)
    if rule is not None:
        evidence.append(f"category {category}: the kernel is {rule.description}")
    elif fault.kernel:
        evidence.append(f"category {category}: a CUDA kernel no rule names")
    kept = [line for line in previous.evidence if not line.startswith(_SUPERSEDED)]
    return Classification(
        category=category,
        fault_kind=FaultKind.GPU_EXCEPTION,
        culprit=Culprit(function=key, module=None, frame_index=None) if key else previous.culprit,
        signature=_signature(fault, abort),
        summary=_summary(report, fault, abort),
        evidence=evidence + kept,
        advice=_advice(category, fault, advice_extra, rules, grules),
        abort_message=previous.abort_message,
        confidence=confidence,
        detail=previous.detail,
        gpu=fault,
        oom=previous.oom,
        hang=previous.hang,
    )


def apply_gpu_core(report: Report, dump: GpuCoreDump, rules: RuleSet | None = None) -> None:
    """The verdict of a GPU core: the GPU exception it records, and the driver's abort of the
    process when the report holds the CPU side too."""
    if dump.first is None:
        report.warnings.append(f"the GPU core {dump.path} records no exception")
        return
    grules = gpu_rules()
    fault = fault_from_dump(dump, report.classification.gpu)
    abort = driver_abort(report, grules)
    evidence = _evidence(dump, fault)
    if abort is not None:
        evidence.append(f"SIGABRT raised under frame #{abort.frame_index} in {abort.module} of thread {abort.tid}: the driver ended the process after the GPU exception")
    report.classification = _classification(
        report, fault, evidence=evidence, advice_extra=[], confidence=Confidence.HIGH, abort=abort,
        rules=rules or default_rules(), grules=grules,
    )  # fmt: skip


def apply_missing_gpu_core(report: Report, lookup: GpuCoreLookup, unreadable: str | None = None, rules: RuleSet | None = None) -> None:
    """Without a GPU core: the GPU faulted when the driver aborted the process with GPU core dumps
    on; the advice says where the GPU core should be. Nothing changes otherwise."""
    grules = gpu_rules()
    abort = driver_abort(report, grules)
    if abort is None:
        return
    enabled = dumps_were_enabled(report, lookup)
    if enabled is None:
        # A driver abort with GPU core dumps off may be the driver's own check: say how to get
        # the GPU core next time, and leave the verdict as it is.
        if grules.missing_disabled not in report.classification.advice:
            report.classification.advice.append(grules.missing_disabled)
        return
    previous = report.classification.gpu
    where = lookup.found if unreadable and lookup.found else lookup.expected
    fault = GpuFault(api=previous.api if previous else None, gpu_core=where,
                     gpu_core_status=GPU_CORE_STATUS_UNREADABLE if unreadable else GPU_CORE_STATUS_MISSING)  # fmt: skip
    evidence = [
        enabled,
        f"SIGABRT raised under frame #{abort.frame_index} in {abort.module} of thread {abort.tid}: the driver ended the process",
        f"the GPU core could not be read: {unreadable}" if unreadable else f"no GPU core named like {os.path.basename(lookup.expected)} beside the core",
    ]
    if unreadable:
        advice = [grules.missing_unreadable.format_map({"reason": unreadable})]
    else:
        advice = [grules.missing_enabled.format_map({"pattern": lookup.pattern or "the driver's default name", "expected": lookup.expected})]
    report.classification = _classification(
        report, fault, evidence=evidence, advice_extra=advice, confidence=Confidence.MEDIUM, abort=abort,
        rules=rules or default_rules(), grules=grules,
    )  # fmt: skip
    state = "could not be read" if unreadable else "is not here"
    report.classification.summary = (
        f"The GPU faulted: the CUDA driver ended the process (SIGABRT from thread {abort.tid}, in {abort.module}) after a GPU "
        f"exception; the GPU core it wrote ({where}) {state}, so the exception and the kernel are unknown."
    )
    host = _host_text(report, None, fault)
    if host:  # one sentence of its own: capitalized
        report.classification.summary += f" {host[:1].upper()}{host[1:]}."
