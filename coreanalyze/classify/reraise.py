"""A fatal signal caught by a handler that raised it again (Python's faulthandler, absl's failure
signal handler, a crash reporter): the core's siginfo is the re-raise, the fault is older.

The handler ran over a signal frame (corefile.sigframe) that still holds the interrupted
registers and, when the handler took a siginfo, the original one. This module tells a re-raise
from a crash inside a handler, reads that frame and settles the report on the original signal:
`core.signal` becomes it (with `reraised_by`), the crashing thread's registers and faulting
instruction become the interrupted code's. Which handlers re-raise, and how, is data
(reraise.toml).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from coreanalyze import rulesdata
from coreanalyze.arch import architecture, fault_from_trap
from coreanalyze.base.model import Report, SignalInfo
from coreanalyze.base.signals import SENDER_CODES, SIGNAL_CODES, code_number, signal_name
from coreanalyze.classify.frames import FrameView, build_views
from coreanalyze.corefile.sigframe import SignalFrame, find_signal_frame, siginfo_written
from coreanalyze.rulesdata.kinds import RERAISE

RULES_FILE = Path(__file__).resolve().parent / "reraise.toml"
# Handlers nested in handlers (absl's re-raising into faulthandler's): at most this many frames.
MAX_NESTED = 4
# A handler's own frames above its trampoline; deeper than this it is not a handler that re-raised.
MAX_HANDLER_FRAMES = 40
MAX_NAME = 120
# Why a handler's frame may hold no siginfo (the kernel copies one only for SA_SIGINFO).
NO_SIGINFO = "installed without SA_SIGINFO, the handler took no siginfo, so the kernel wrote none into its frame"
ABORT = re.compile(r"^(?:__GI_)?abort$")
# Signals a handler may turn into abort(): the original was one of these, the core says SIGABRT.
ABORTED_FAULTS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS", "SIGABRT"})


@dataclass(frozen=True)
class HandlerRule:
    name: str
    functions: tuple[re.Pattern[str], ...] = ()
    same_signal: bool = False
    tail_call_in: str | None = None


@dataclass(frozen=True)
class ReraiseRules:
    reraise_functions: tuple[re.Pattern[str], ...]
    handlers: tuple[HandlerRule, ...]

    def reraises(self, name: str) -> bool:
        return any(p.search(name) for p in self.reraise_functions)


@functools.cache
def reraise_rules() -> ReraiseRules:
    data = rulesdata.shipped(RULES_FILE, RERAISE)
    handlers = tuple(
        HandlerRule(
            name=h["name"],
            functions=tuple(re.compile(p) for p in h.get("functions", [])),
            same_signal=bool(h.get("same_signal", False)),
            tail_call_in=h.get("tail_call_in"),
        )
        for h in data.get("handler", [])
    )
    return ReraiseRules(tuple(re.compile(p) for p in data["reraise_functions"]), handlers)


@dataclass(frozen=True)
class Reraise:
    """One handler that re-raised: which, over which trampoline, and what it took."""

    handler: HandlerRule
    trampoline: int  # the trampoline frame's index in the crashing thread
    frame: SignalFrame
    original: SignalInfo
    source: str  # where `original` comes from, in words


def name_handler(above: Sequence[FrameView], rules: ReraiseRules, module_classes: set[str]) -> HandlerRule | None:
    """The handler whose frames are `above` a trampoline (innermost first), or None when they
    are no known handler and hold no re-raise: then whatever ran there crashed on its own."""
    native = [v for v in above if not v.python]
    if not native or len(native) > MAX_HANDLER_FRAMES:
        return None
    for v in reversed(native):  # from the trampoline up: the handler is called first
        for rule in rules.handlers:
            # A known handler may raise with an inline system call (Breakpad's sys_tgkill).
            if v.name and any(p.search(v.name) for p in rule.functions):
                return rule
    if not any(rules.reraises(v.name) for v in native if v.name):
        return None
    if rules.reraises(native[-1].name or ""):
        # raise() returns straight into the trampoline: the handler tail-called it.
        for rule in rules.handlers:
            if rule.tail_call_in is not None and rule.tail_call_in in module_classes:
                return rule
    own = next((v for v in reversed(native) if v.name and not rules.reraises(v.name)), None)
    if own is not None:
        return HandlerRule(name=own.name[:MAX_NAME])  # rendered escaped, like every frame name
    return HandlerRule(name="a signal handler" + (f" in {native[-1].module_base}" if native[-1].module_base else ""))


def _self_sent(signal: SignalInfo, pid: int | None) -> bool:
    """A signal the process raised itself (or one whose siginfo is unknown)."""
    code = signal.code if signal.code is not None else code_number(signal.code_name)
    if code is None:
        return True
    return code in SENDER_CODES and (signal.sender_pid is None or pid is None or signal.sender_pid == pid)


def _original(
    frame: SignalFrame, handler: HandlerRule, current: SignalInfo, layout, arch: str | None, aborted: bool
) -> tuple[SignalInfo | None, str]:
    """The signal the handler took, and where it was read; (None, why) when the frame cannot say.
    aborted: the handler ended in abort(), not in raising its own signal again."""
    number = current.number if handler.same_signal and not aborted else None
    if siginfo_written(frame, layout, number):
        info = frame.siginfo
        if number is None and info.number != current.number and not (current.name == "SIGABRT" and info.name in ABORTED_FAULTS):
            # A handler that took one signal and died of another it did not re-raise (an
            # assert() failing inside a SIGUSR1 handler): the crash is the handler's own.
            return None, ""
        return replace(info), "read from the siginfo in its signal frame"
    if number is None:
        return None, f"{handler.name} ran over a signal frame that holds no siginfo, so the signal it took is not known"
    name = signal_name(number)
    info = SignalInfo(number=number, name=name)
    fault = fault_from_trap(arch, name, frame.context, frame.registers.get(layout.pc))
    if fault is None:
        return info, f"the signal it raised again ({NO_SIGINFO})"
    info.code_name, info.address = fault
    info.code = code_number(info.code_name) if info.code_name.startswith("SI_") else _fault_code(name, info.code_name)
    return info, f"rebuilt from the trap its saved registers name ({NO_SIGINFO})"


def _fault_code(signal: str, code_name: str) -> int | None:
    return next((n for n, known in SIGNAL_CODES.get(signal, {}).items() if known == code_name), None)


def find_reraises(report: Report, memory, rules) -> tuple[list[Reraise], list[str]]:
    """The handlers that re-raised on the crashing thread, innermost first, and warnings."""
    core, thread = report.core, report.crashed_thread
    arch = architecture(core.arch if core else None)
    if core is None or thread is None or arch is None or arch.signal_frame is None or memory is None:
        return [], []
    layout = arch.signal_frame
    views = build_views(thread.frames, report.modules, rules)
    module_classes = {c for c in (rules.module_class(m.path) for m in report.modules) if c}
    handler_rules = reraise_rules()
    found: list[Reraise] = []
    warnings: list[str] = []
    current = core.signal
    sp = thread.registers.get(layout.sp)
    top = 0
    trampolines = [v for v in views if v.role == "trampoline" and not v.python][:MAX_NESTED]
    for tramp in trampolines:
        above = views[top : tramp.position]
        handler = name_handler(above, handler_rules, module_classes)
        if handler is None or not _self_sent(current, core.pid) or sp is None:
            break
        below = next((v for v in views[tramp.position + 1 :] if not v.python), None)
        frame, why = find_signal_frame(
            memory, layout, sp, trampoline_pc=tramp.frame.pc, expected_pc=below.frame.pc if below is not None else None
        )
        if frame is None:
            warnings.append(f"the signal was re-raised by {handler.name}, but its signal frame could not be read ({why}); the signal shown is the re-raise")
            break
        aborted = any(ABORT.match(v.name) for v in above if v.name and not v.python)
        original, source = _original(frame, handler, current, layout, arch.name, aborted)
        if original is None:
            if source:
                warnings.append(source)
            break
        found.append(Reraise(handler, tramp.index, frame, original, source))
        current, sp, top = original, frame.registers.get(layout.sp), tramp.position + 1
    return found, warnings


def describe(signal: SignalInfo, pid: int | None) -> str:
    """'SIGSEGV (SI_TKILL) from pid 55' / 'SIGSEGV (SEGV_MAPERR) at 0x10'."""
    text = signal.name or (f"signal {signal.number}" if signal.number is not None else "an unknown signal")
    if signal.code_name:
        text += f" ({signal.code_name})"
    if signal.address is not None:
        text += f" at {signal.address:#x}"
    if signal.sender_pid is not None:
        text += " from the process itself" if signal.sender_pid == pid else f" from pid {signal.sender_pid}"
    return text


def settle_reraised_signal(report: Report, memory, rules, instructions: dict[int, str] | None = None) -> None:
    """Put the original signal, registers and faulting instruction in the report when the
    crashing thread's handler re-raised; otherwise leave it as it is (with a warning when a
    re-raise was seen but its frame could not be read). instructions: the debugger's disassembly
    at the pcs signals interrupted (pc -> text)."""
    reraises, warnings = find_reraises(report, memory, rules)
    report.warnings.extend(warnings)
    if not reraises or report.core is None:
        return
    core, thread = report.core, report.crashed_thread
    first = reraises[-1]  # the handler that took the original signal
    layout = architecture(core.arch).signal_frame
    raised = core.signal
    for step in reraises:
        report.warnings.append(
            f"{describe(raised, core.pid)} is a re-raise by {step.handler.name} (the frames above #{step.trampoline});"
            f" it took {describe(step.original, core.pid)}: {step.source}; the interrupted registers are read"
            f" from the signal frame at {step.frame.address:#x}"
        )
        raised = step.original
    core.signal = replace(first.original, reraised_by=first.handler.name)
    thread.registers = {**thread.registers, **first.frame.registers}
    report.fault_instruction = (instructions or {}).get(first.frame.registers.get(layout.pc))
