"""A batch's cores that are ranks of one job: one event, named by its root cause.

Cores whose reports name the same job (report.job.id, from each process's environment) are one
event, unless a rank repeats (a restarted run) or EVENT_GAP_SECONDS pass between two of them.
The event's verdict (jobs/verdict.py) names the rank(s) that crashed on their own and every
other rank with what it waited in, the order the cores were written and who sent the signals.
In the fleet's view the event counts once: its root cause's core stands for it in the crash
groups (and so in the trends), and the other ranks are listed under it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

from coreanalyze.base.model import JobVerdict, JobWait, RankVerdict
from coreanalyze.batch.store import CoreRecord
from coreanalyze.jobs.verdict import job_verdict

# A job's ranks die within a watchdog's timeout of each other (NCCL's is 10 minutes, gloo's 30);
# cores of the same job further apart are another run of it.
EVENT_GAP_SECONDS = 6 * 3600.0


@dataclass
class JobEvent:
    id: str
    members: list[CoreRecord]  # by rank
    verdict: JobVerdict
    representative: CoreRecord  # the root cause's first core, else the lowest rank's

    def to_dict(self, signature: str | None = None) -> dict[str, Any]:
        v = self.verdict
        world = next((r.job.get("world_size") for r in self.members if r.job and r.job.get("world_size") is not None), None)
        reports = {r.path: r.report_html for r in self.members}
        shrunk = {r.path: r.shrunk for r in self.members}
        return {
            "id": self.id,
            "signature": signature,
            "world_size": world,
            "cores": len(self.members),
            "root_cause": v.root_cause,
            "single": v.single,
            "summary": v.summary,
            "missing": v.missing,
            "ranks": [{**asdict(r), "report_html": reports.get(r.core), "shrunk": shrunk.get(r.core)} for r in v.ranks],
        }


def other_ranks(analyzed: list[CoreRecord], examples: list[CoreRecord]) -> list[CoreRecord]:
    """The other ranks of each job whose root cause's core is one of the examples: `batch
    --shrink` attaches a small core for every rank of a job, each rank's wait being part of the
    job's verdict."""
    chosen = {r.path for r in examples}
    return [m for e in job_events(analyzed) if e.representative.path in chosen for m in e.members if m.path not in chosen]


def job_events(analyzed: list[CoreRecord]) -> list[JobEvent]:
    by_id: dict[str, list[CoreRecord]] = {}
    for r in analyzed:
        job_id = (r.job or {}).get("id")
        if isinstance(job_id, str) and job_id:
            by_id.setdefault(job_id, []).append(r)
    return [_event(job_id, members) for job_id, records in sorted(by_id.items()) for members in _runs(records)]


def _runs(records: list[CoreRecord]) -> Iterator[list[CoreRecord]]:
    """The cores of one job id split into runs: a rank seen again, or a long gap, starts another."""
    ordered = sorted(records, key=lambda r: (r.timestamp is None, r.timestamp or 0.0, r.path, r.identity))
    current: list[CoreRecord] = []
    seen: set[Any] = set()
    last: float | None = None
    for r in ordered:
        rank = r.job.get("rank")
        gap = r.timestamp is not None and last is not None and r.timestamp - last > EVENT_GAP_SECONDS
        if current and (gap or (rank is not None and rank in seen)):
            yield current
            current, seen = [], set()
        current.append(r)
        seen.add(rank)
        last = r.timestamp if r.timestamp is not None else last
    if current:
        yield current


def _sender(record: CoreRecord, by_pid: dict[tuple[str | None, int], CoreRecord]) -> str | None:
    pid = record.sender_pid
    if pid is None or pid == record.pid:
        return None
    peer = by_pid.get((record.host, pid))
    if peer is not None and peer is not record:
        return f"rank {peer.job.get('rank')}"
    if record.ppid is not None and pid == record.ppid:
        return f"its parent process (pid {pid})"
    return f"pid {pid}"


def _wait(d: Any) -> JobWait | None:
    return JobWait(**d) if isinstance(d, dict) else None


def _event(job_id: str, members: list[CoreRecord]) -> JobEvent:
    by_pid = {(r.host, r.pid): r for r in members if r.pid is not None}
    timed = sorted((r for r in members if r.timestamp is not None), key=lambda r: (r.timestamp, r.path))
    died = {id(r): i + 1 for i, r in enumerate(timed)} if len(timed) == len(members) else {}
    ranks = []
    for r in members:
        job = r.job
        ranks.append(RankVerdict(
            rank=job.get("rank"), state=job.get("state") or "unknown", fault_kind=r.fault_kind, signal=r.signal,
            summary=r.summary, signature=r.signature, pid=r.pid, host=r.host, waited=_wait(job.get("waited")),
            sent_by=_sender(r, by_pid) if job.get("state") != "crashed" else None, died=died.get(id(r)), core=r.path,
        ))
    world = max((r.job.get("world_size") or 0 for r in members), default=0) or None
    verdict = job_verdict(ranks, world)
    by_rank = sorted(members, key=lambda r: (r.job.get("rank") is None, r.job.get("rank") or 0, r.path))
    root = [r for r in by_rank if r.job.get("rank") in verdict.root_cause]
    first = min(root, key=lambda r: (died.get(id(r), 0), r.job.get("rank") or 0)) if root else by_rank[0]
    return JobEvent(id=job_id, members=by_rank, verdict=verdict, representative=first)
