"""Which rank a waiting rank waited for, where its own memory says so.

In a job of two ranks the peer is the other one. With more, a frame does not say which peer a
pending call waits for; the runtime's structures that do have no debug info and change with every
build. What the memory does hold is text: TensorFlow keeps the error of a call to a task that
failed (a Status message, the Python exception raised from it) in the caller's memory, in the
words its log prints ("Additional GRPC error information from remote target /job:worker/replica:0
/task:1 while calling ...", then the remote's own "Connection reset by peer"). The needles of
jobs/rules.toml [peer_in_memory] find those strings; each is read as a log line for the
[[failed_task]] rules, and the task named is ranked by the core's own TF_CONFIG.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import islice
from typing import Any, Mapping

from coreanalyze.corefile.memory import find_in_writable, searching
from coreanalyze.corefile.tables import printable_text
from coreanalyze.jobs.identity import tf_cluster, tf_rank
from coreanalyze.jobs.rules import JobRules

# The Process (coreanalyze.process.process); named in words, as process/currentenv.py does.
Process = Any

MAX_SCANNED = 4 << 30  # bytes of writable memory searched, at most
MAX_HITS = 64  # strings read; a failed call's error is copied a few times, not hundreds
MAX_TEXT = 2048  # bytes read from each hit: the line and the remote's words on the next one


@dataclass(frozen=True)
class MemoryPeer:
    rank: int
    says: str  # what became of it, in the rule's words
    line: str  # the first line of the error that names it
    count: int  # strings in memory that name it


def peer_in_memory(process: Process, environ: Mapping[str, str], own_rank: int | None, rules: JobRules) -> MemoryPeer | None:
    """The task this TensorFlow task's memory says failed under its calls, ranked as its TF_CONFIG
    ranks the cluster; None where no string names one, or two tasks are named equally often."""
    cluster = tf_cluster(environ)
    if cluster is None or not rules.memory_needles:
        return None
    tasks = cluster[0]
    named: Counter[int] = Counter()
    first: dict[int, MemoryPeer] = {}
    for text in _strings(process, rules.memory_needles):
        for rule in rules.failed_tasks:
            match = None if rule.leader else rule.pattern.search(text)
            if match is None:
                continue
            rank = tf_rank(tasks, match.group("job"), int(match.group("task")))
            if rank is not None and rank != own_rank:
                named[rank] += 1
                first.setdefault(rank, MemoryPeer(rank, rule.says, text.split("\n", 1)[0][:300], 0))
            break
    ranked = named.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    rank, count = ranked[0]
    peer = first[rank]
    return MemoryPeer(rank, peer.says, peer.line, count)


def _strings(process: Process, needles: tuple[bytes, ...]) -> list[str]:
    hits: list[int] = []
    with searching():  # a search: a shrunk core keeps what it found (read below), not all it looked through
        for needle in needles:
            hits.extend(islice(find_in_writable(process, needle, MAX_SCANNED), MAX_HITS - len(hits)))
    texts = []
    for at in hits:
        raw = process.read_cstring(at, MAX_TEXT)
        if raw:
            texts.append(printable_text(raw))
    return texts
