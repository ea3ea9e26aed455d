"""TensorFlow hangs with a name (hang/rules.toml [[tensorflow]]): bind each rule's roles to the
snapshot's threads; the first rule whose roles all find a thread names the hang."""

from __future__ import annotations

from dataclasses import dataclass

from coreanalyze.base.model import Thread, ThreadWait
from coreanalyze.hang.rules import HangRules, TensorFlowHangRule, ThreadPattern
from coreanalyze.hang.waits import frame_name


@dataclass
class TensorFlowHang:
    rule: TensorFlowHangRule
    threads: dict[str, int]  # role -> tid

    @property
    def first_tid(self) -> int:
        return next(iter(self.threads.values()))


def _frame_texts(thread: Thread) -> list[str]:
    texts = []
    for frame in thread.frames:
        if frame.kind == "python":
            texts.append(frame.file or "")
            texts.append(frame.function or "")
        else:
            texts.append(frame_name(frame))
    return [t for t in texts if t]


def _fits(pattern: ThreadPattern, thread: Thread, wait: ThreadWait, pid: int | None) -> bool:
    if pattern.state and wait.state not in pattern.state:
        return False
    if pattern.holds_gil is not None and bool(thread.holds_gil) != pattern.holds_gil:
        return False
    if pattern.main is not None and (thread.tid == pid) != pattern.main:
        return False
    texts = _frame_texts(thread)
    return all(any(p.search(t) for t in texts) for p in pattern.frames)


def match_tensorflow_hang(
    threads: list[Thread], waits: list[ThreadWait], rules: HangRules, pid: int | None
) -> TensorFlowHang | None:
    by_tid = {w.tid: w for w in waits}
    for rule in rules.tensorflow:
        if rule.max_threads is not None and len(threads) > rule.max_threads:
            continue
        if rule.idle_threads is not None:
            pool = [t for t in threads if any(rule.idle_threads.search(x) for x in _frame_texts(t))]
            if not pool or any(by_tid[t.tid].state not in rule.idle_state for t in pool):
                continue
        bound: dict[str, int] = {}
        for pattern in rule.roles:
            found = next((t for t in threads if _fits(pattern, t, by_tid[t.tid], pid)), None)
            if found is None:
                break
            bound[pattern.role] = found.tid
        else:
            return TensorFlowHang(rule, bound)
    return None
