"""The wait-for graph of a snapshot: an edge from each thread waiting on a lock to the thread that
holds it (a glibc mutex's owner, the GIL's holder). A waiting thread waits for one thing, so each
thread has at most one edge and a deadlock is a cycle found by following them."""

from __future__ import annotations

from coreanalyze.base.model import DeadlockStep, ThreadWait

LOCK_STATES = ("mutex", "gil")


def lock_name(wait: ThreadWait) -> str:
    """'the GIL', 'mutex 0x55d0c2a4c080', 'a mutex'."""
    if wait.state == "gil":
        return "the GIL"
    kind = wait.object_kind or wait.state
    if wait.object is None:
        return f"a {kind}"
    if wait.object_name:
        return f"{kind} {wait.object_name} (0x{wait.object:x})"
    return f"{kind} 0x{wait.object:x}"


def edges(waits: list[ThreadWait]) -> dict[int, int]:
    """tid -> tid of the thread holding what it waits for."""
    return {w.tid: w.owner for w in waits if w.state in LOCK_STATES and w.owner is not None and w.owner != w.tid}


def find_deadlock(waits: list[ThreadWait]) -> list[DeadlockStep]:
    """The first cycle of the wait-for graph (threads in the order they wait for each other)."""
    by_tid = {w.tid: w for w in waits}
    graph = edges(waits)
    for start in sorted(graph):
        path: list[int] = []
        seen: dict[int, int] = {}
        tid: int | None = start
        while tid is not None and tid in graph and tid not in seen:
            seen[tid] = len(path)
            path.append(tid)
            tid = graph[tid]
        if tid is None or tid not in seen:
            continue
        cycle = [by_tid[t] for t in path[seen[tid]:]]
        steps = []
        for i, wait in enumerate(cycle):
            before = cycle[i - 1]  # waits for what this thread holds
            steps.append(
                DeadlockStep(
                    tid=wait.tid,
                    holds=lock_name(before),
                    wants=lock_name(wait),
                    waits_for=wait.owner,
                    function=wait.function,
                    frame_index=wait.frame_index,
                    file=wait.file,
                    line=wait.line,
                )
            )
        return steps
    return []


def orphaned_locks(waits: list[ThreadWait]) -> list[ThreadWait]:
    """Threads waiting on a mutex whose owner is not a thread of this process."""
    tids = {w.tid for w in waits}
    return [w for w in waits if w.state == "mutex" and w.owner is not None and w.owner not in tids]
