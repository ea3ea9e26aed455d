"""The verdict on a snapshot: fault kind `hang`, who waits on whom, the deadlock cycle or the
TensorFlow hang it is, a signature that groups the same hang across cores, and advice."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING

from coreanalyze.base.model import Classification, Culprit, HangInfo, Report, ThreadWait
from coreanalyze.base.vocabulary import Platform
from coreanalyze.classify import classify, default_rules
from coreanalyze.hang.describe import STATE_WORDS, describe_step, describe_wait
from coreanalyze.hang.graph import find_deadlock, lock_name, orphaned_locks
from coreanalyze.hang.locknames import lock_symbol
from coreanalyze.hang.rules import HangRules
from coreanalyze.hang.tensorflow import TensorFlowHang, match_tensorflow_hang
from coreanalyze.hang.waits import thread_waits

if TYPE_CHECKING:
    from coreanalyze.process.process import Process

SIGNATURE_THREADS = 6


def _signature(info: HangInfo, waits: list[ThreadWait], tf: TensorFlowHang | None, op: str | None, key: ThreadWait | None = None) -> str:
    if key is not None and key.state == "gpu" and not info.deadlock and tf is None:
        # A GPU hang is the call that waits and the code that made it, whatever the driver's
        # own threads do meanwhile.
        return f"hang | gpu {key.object_kind or '??'} | {key.function or '??'}"
    if info.deadlock:
        kind = "GIL deadlock" if any("GIL" in s.wants for s in info.deadlock) else "deadlock"
        return f"hang | {kind} | " + " <-> ".join(sorted(s.function or "??" for s in info.deadlock))
    if tf is not None:
        return f"hang | {tf.rule.name}" + (f" | {op}" if op else "")
    # The set of (state, where) pairs: the same hang with more or fewer pool threads groups together.
    pairs = sorted({f"{w.state}@{w.function or '??'}" for w in waits})
    shown = pairs[:SIGNATURE_THREADS] + ([f"+{len(pairs) - SIGNATURE_THREADS}"] if len(pairs) > SIGNATURE_THREADS else [])
    return "hang | " + " ".join(shown)


def _counts(waits: list[ThreadWait]) -> str:
    counts = Counter(w.state for w in waits)
    return ", ".join(f"{n} {STATE_WORDS.get(state, state)}" for state, n in counts.most_common())


def _key_thread(report: Report, waits: list[ThreadWait], info: HangInfo, tf: TensorFlowHang | None) -> ThreadWait | None:
    by_tid = {w.tid: w for w in waits}
    if info.deadlock:
        return by_tid.get(info.deadlock[0].tid)
    if tf is not None:
        return by_tid.get(tf.first_tid)
    pid = report.core.pid if report.core else None
    main = by_tid.get(pid)
    if main is None or main.state != "gpu":
        # A thread that waits for the GPU from Python is where the user stands.
        main = next((w for w in waits if w.state == "gpu" and w.file), main)
    return main or next((w for w in waits if w.state != "running"), waits[0] if waits else None)


def _summary(info: HangInfo, waits: list[ThreadWait], tf: TensorFlowHang | None, key: ThreadWait | None, op: str | None) -> str:
    if info.deadlock:
        kind = "GIL deadlock" if any("GIL" in s.wants or "GIL" in s.holds for s in info.deadlock) else "deadlock"
        return f"hang: {kind} of {len(info.deadlock)} threads: " + "; ".join(describe_step(s) for s in info.deadlock) + "."
    if tf is not None:
        values = {
            "op_text": f" (op {op}, waiting in {key.function})" if op and key is not None else (f" (waiting in {key.function})" if key is not None and key.function else ""),
            "function": (key.function if key is not None else None) or "??",
            "role_tid": str(tf.first_tid),
            "holder_tid": str(info.gil_holder) if info.gil_holder is not None else "?",
            "op": op or "?",
        }
        try:
            return tf.rule.summary.format(**values)
        except (KeyError, IndexError, ValueError):
            return tf.rule.summary
    if key is not None and key.state == "gpu":
        return (
            f"hang: {describe_wait(key)}: the GPU work it waits for does not finish (a kernel that "
            f"does not end, or a collective whose peers never join); {len(waits)} threads: {_counts(waits)}."
        )
    if waits and all(w.state == "running" for w in waits):
        where = sorted({w.function for w in waits if w.function})
        return f"hang snapshot of a busy process: every thread is running (in {', '.join(where[:4]) or 'unknown code'}); no thread waits and there is no deadlock."
    text = f"hang: no deadlock cycle; {len(waits)} thread{'s' if len(waits) != 1 else ''}: {_counts(waits)}."
    if key is not None:
        text += f" Main: {describe_wait(key)}."
    return text


def hang_classification(report: Report, process: Process | None, reason: str, rules: HangRules, classify_rules=None) -> Classification:
    waits = thread_waits(report.threads, process, rules)
    names: dict[int, str | None] = {}
    for w in waits:
        if w.object is not None and w.state in ("mutex", "futex", "condition"):
            if w.object not in names:
                names[w.object] = lock_symbol(w.object, process)
            w.object_name = names[w.object]
    info = HangInfo(reason=reason, threads=waits)
    info.gil_holder = next((t.tid for t in report.threads if t.holds_gil), None)
    info.gil_waiters = [w.tid for w in waits if w.state == "gil"]
    info.deadlock = find_deadlock(waits)
    pid = report.core.pid if report.core else None
    tf = None if info.deadlock else match_tensorflow_hang(report.threads, waits, rules, pid)
    info.rule = tf.rule.name if tf is not None else None
    key = _key_thread(report, waits, info, tf)
    info.thread = key.tid if key is not None else None

    # The subsystem rules and the op finder of a crash, applied to the thread that matters.
    view = dataclasses.replace(report, crashing_thread=key.tid if key is not None else None)
    base = classify(view, rules=classify_rules)
    op = base.op

    evidence = [reason]
    if tf is not None and tf.rule.evidence:
        evidence.append(f"{tf.rule.name}: {tf.rule.evidence}")
    evidence += [f"deadlock: {describe_step(s)}" for s in info.deadlock]
    if info.gil_holder is not None:
        evidence.append(f"the GIL is held by thread {info.gil_holder}" + (f"; waiting for it: {', '.join(map(str, info.gil_waiters))}" if info.gil_waiters else ""))
    orphans = orphaned_locks(waits)
    evidence += [f"{lock_name(w)} is held by tid {w.owner}, which is not a thread of this process" for w in orphans]
    if not info.deadlock:
        evidence.append("no cycle in the wait-for graph (mutex owners and the GIL)")

    if info.deadlock:
        gil = any("GIL" in s.wants for s in info.deadlock)
        advice = list(rules.advice.get("gil_deadlock" if gil else "deadlock", ()))
    elif tf is not None:
        advice = list(tf.rule.advice)
    elif orphans:
        advice = list(rules.advice.get("orphaned_lock", ()))
    elif key is not None and key.state == "gpu":
        advice = list(rules.advice.get("gpu", ()))
    elif waits and all(w.state == "running" for w in waits):
        advice = list(rules.advice.get("running", ()))
    else:
        advice = list(rules.advice.get("waiting", ()))

    # Advice for hangs in general from the classification rules (a user's --rules first); the
    # threads of a process were read, so not a microcontroller's watchdog advice.
    general = sorted(
        (e for e in (classify_rules or default_rules()).advice if e.fault_kind == "hang" and e.platform in (None, Platform.HOSTED)),
        key=lambda e: e.origin == "built-in",
    )
    advice += [line for entry in general for line in entry.lines if line not in advice]

    culprit = Culprit()
    if key is not None:
        thread = report.thread(key.tid)
        frame = next((f for f in thread.frames if f.index == key.frame_index), None) if thread else None
        module = (frame.file if frame.kind == "python" else frame.module) if frame is not None else None
        culprit = Culprit(function=key.function, module=module, frame_index=key.frame_index)
    return Classification(
        category=tf.rule.category if tf is not None else base.category,
        fault_kind="hang",
        culprit=culprit,
        signature=_signature(info, waits, tf, op, key),
        summary=_summary(info, waits, tf, key, op),
        evidence=evidence,
        advice=advice,
        confidence="high" if info.deadlock else ("medium" if tf is not None or waits else "low"),
        op=op,
        hang=info,
        gpu=base.gpu,  # the GPU call the thread the verdict is about waits in
    )
