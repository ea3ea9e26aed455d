"""Which LWP (the kernel's thread id, as the core names threads) each Python thread state is."""

from __future__ import annotations

from .memory import Memory
from .target import ReadError

# glibc's struct pthread keeps the kernel tid here on x86_64 (used to map 3.10's thread_id,
# a pthread_t, to an LWP; checked against the core's LWPs and recalibrated if it is wrong).
PTHREAD_TID_OFFSET_X86_64 = 720


def map_thread_ids(mem: Memory, thread_ids: list[int], lwps: set[int]) -> dict[int, int]:
    """pthread_t -> LWP: glibc keeps the tid inside struct pthread; find at which offset."""
    def mapped(offset: int) -> dict[int, int]:
        found: dict[int, int] = {}
        for tid in thread_ids:
            try:
                value = mem.u32(tid + offset)
            except ReadError:
                continue
            if value in lwps:
                found[tid] = value
        return found

    best = mapped(PTHREAD_TID_OFFSET_X86_64)
    if len(best) == len(thread_ids):
        return best
    # Another libc layout: take the offset that maps the most thread ids to distinct LWPs.
    for offset in range(0, 2048, 4):
        candidate = mapped(offset)
        if len(candidate) > len(best) and len(set(candidate.values())) == len(candidate):
            best = candidate
    return best


def assign_lwps(mem: Memory, threads: list[dict], lwps: set[int], warnings: list[str]) -> None:
    """Each thread's LWP: its native thread id where the core has that LWP, else (3.10 keeps only
    a pthread_t) the tid in its struct pthread; a warning for a thread state no LWP matches."""
    unresolved = [t for t in threads if t["tid"] not in lwps and t["thread_id"]]
    if unresolved and lwps:
        mapping = map_thread_ids(mem, [t["thread_id"] for t in unresolved], lwps)
        for t in unresolved:
            t["tid"] = mapping.get(t["thread_id"], t["tid"])
    for t in threads:
        if lwps and t["tid"] not in lwps:
            warnings.append(
                f"Python thread state 0x{t['tstate']:x} matches no thread of the core"
                " (a thread that had exited, or a corrupt state)"
            )
