"""The one-sentence verdict: signal, fault kind, where, and what called it."""

from __future__ import annotations

from dataclasses import dataclass

from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.classify.customop import CustomOpHit
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.names import short_name
from coreanalyze.classify.op import OpFinding

MAX_MESSAGE = 120

KIND_PHRASES = {
    FaultKind.NULL_DEREF: "null-deref",
    FaultKind.INVALID_ACCESS: "invalid access",
    FaultKind.STACK_OVERFLOW: "stack overflow",
    FaultKind.HEAP_CORRUPTION: "heap corruption",
    FaultKind.CHECK_FAILURE: "check failure",
    FaultKind.ABORT: "abort",
    FaultKind.UNCAUGHT_EXCEPTION: "uncaught C++ exception",
    FaultKind.ILLEGAL_INSTRUCTION: "illegal instruction",
    FaultKind.DIVIDE_BY_ZERO: "division by zero",
    FaultKind.BUS_ERROR: "bus error",
    FaultKind.SENT_SIGNAL: "",
    FaultKind.UNKNOWN: "",
}


@dataclass
class SummaryFacts:
    signal: str | None
    fault_kind: str
    category: str
    culprit: FrameView | None
    caller: FrameView | None  # the next significant frame under the culprit
    custom: CustomOpHit | None
    op: OpFinding | None
    abort_message: str | None
    address: int | None
    sender: str | None
    instruction: str | None
    feature: str | None
    python_only: bool
    tf_caller: FrameView | None  # the first TensorFlow frame under a custom-op frame
    python_site: FrameView | None = None  # the innermost Python frame under the culprit
    bad_jump_pc: int | None = None  # the thread jumped here, where there is no code
    detail: str | None = None  # the report's own class (sanitizer class, exception type)


def _where(v: FrameView) -> str:
    if v.python:
        file = v.frame.file or "?"
        for marker in ("/site-packages/", "/dist-packages/"):
            if marker in file:
                file = file.split(marker, 1)[1]  # the package path says more than the venv
        line = f":{v.frame.line}" if v.frame.line else ""
        return f"{v.name or '?'} ({file}{line})"
    if v.name:
        name = short_name(v.name)
    else:
        name = f"an unnamed function under {v.entry_point}" if v.entry_point else "an unnamed function"
    lib = v.module_base or (v.file_base if v.frame.file else "")
    return f"{name} ({lib})" if lib else name


def _message(text: str | None) -> str | None:
    if not text:
        return None
    line = " ".join(text.strip().split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def summarize(f: SummaryFacts) -> str:
    sentence = _summarize_native(f)
    if f.python_site is not None and not f.python_only and f.fault_kind != FaultKind.SENT_SIGNAL:
        # The Python line that called into the native code is what the user recognizes.
        sentence = f"{sentence[:-1]}, from Python {_where(f.python_site)}."
    return sentence


def _unwrapped(detail: str, kind: str) -> str:
    """A class that leads with the fault kind already said ("stack-overflow (Stack canary
    watchpoint triggered (ESP-IDF))") without it."""
    prefix = f"{kind} ("
    return detail[len(prefix) : -1] if detail.startswith(prefix) and detail.endswith(")") else detail


def _summarize_native(f: SummaryFacts) -> str:
    # A watchdog's verdict (a device's task watchdog, a runtime's deadline) is a hang, not a crash.
    head = f.signal or ("Hang" if f.fault_kind == FaultKind.HANG else "Crash")
    phrase = KIND_PHRASES.get(f.fault_kind, "")
    if f.fault_kind == FaultKind.SENT_SIGNAL:
        phrase = f"sent by {f.sender}" if f.sender else "sent by another process"
    if phrase:
        head += f" {phrase}"
    msg = _message(f.abort_message)
    if msg and f.fault_kind in (FaultKind.CHECK_FAILURE, FaultKind.HEAP_CORRUPTION, FaultKind.ABORT, FaultKind.UNCAUGHT_EXCEPTION):
        head += f" ({msg})"
    elif f.detail:
        head += f" ({_message(_unwrapped(f.detail, f.fault_kind))})"
    if f.bad_jump_pc is not None:
        head += f", a jump to 0x{f.bad_jump_pc:x} (a call through a null or corrupt function pointer),"
    elif f.fault_kind == FaultKind.NULL_DEREF and f.address is not None:
        head += f" at 0x{f.address:x}"
    if f.fault_kind == FaultKind.ILLEGAL_INSTRUCTION and f.instruction:
        head += f" `{f.instruction}`" + (f" (needs {f.feature})" if f.feature and not f.feature.startswith("none") else "")

    if f.culprit is None:
        return f"{head}; no frames were recovered for the crashing thread."
    if f.fault_kind == FaultKind.SENT_SIGNAL:
        return f"{head} while the thread was in {_where(f.culprit)}."

    if f.custom is not None:
        lib = f.custom.library
        custom_name = short_name(f.custom.view.name) or "an unnamed function"
        if f.custom.view is f.culprit:
            by = f", called by TensorFlow's {short_name(f.tf_caller.name)}" if f.tf_caller is not None and f.tf_caller.name else ""
            return f"{head} in custom op {custom_name} ({lib}){by}."
        return f"{head} in {_where(f.culprit)}, called from custom op {custom_name} ({lib})."

    if f.python_only:
        return f"{head} in {_where(f.culprit)}; the report has no native frames."

    where = _where(f.culprit)
    if f.op is not None and f.op.view is not None and f.op.view is not f.culprit:
        kind = {"kernel": "kernel", "dataset": "tf.data dataset op", "tflite-builtin": "TFLite builtin op", "tflite-custom": "TFLite custom op", "tflite-delegate": "TFLite"}.get(f.op.kind, "op")
        if f.op.kind == "kernel":
            return f"{head} in {where}, called from {kind} {short_name(f.op.view.name)}."
        return f"{head} in {where}, in {kind} {f.op.name}."
    if f.op is not None and f.op.kind in ("tflite-builtin", "tflite-custom"):
        kind = "TFLite builtin op" if f.op.kind == "tflite-builtin" else "TFLite custom op"
        return f"{head} in {kind} {f.op.name}: {where}."
    if f.caller is not None:
        return f"{head} in {where}, called by {short_name(f.caller.name) if f.caller.name else f.caller.label}."
    return f"{head} in {where}."
