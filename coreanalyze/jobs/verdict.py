"""The verdict over one job's ranks: which rank crashed on its own (the root cause), which ones
waited for it and in what, in what order they died and who sent the signals; or, where no rank
crashed, why the evidence names no single one.

The same for a batch's cores of one job (batch/jobs.py) and for a job's pasted log
(triage/job.py): each gives one RankVerdict per rank it knows of.
"""

from __future__ import annotations

from coreanalyze.base.model import JobVerdict, JobWait, RankVerdict

MAX_LISTED = 8  # ranks named in a summary line; the rest are counted


def rank_list(ranks: list[int | None]) -> str:
    named = [str(r) for r in ranks if r is not None][:MAX_LISTED]
    more = len([r for r in ranks if r is not None]) - len(named)
    text = ", ".join(named[:-1]) + (" and " if len(named) > 1 else "") + named[-1] if named else "?"
    return text + (f" and {more} more" if more > 0 else "")


def _ranks_word(ranks: list[int | None]) -> str:
    return ("ranks " if len(ranks) > 1 else "rank ") + rank_list(ranks)


def wait_text(wait: JobWait | None) -> str:
    """"for rank 1 in torch.distributed.all_reduce at train.py:62" (the rank where it is known)."""
    if wait is None:
        return ""
    parts = [f"for rank {wait.peer}"] if wait.peer is not None else []
    if wait.collective:
        parts.append(f"in {wait.collective}")
    elif wait.function:
        parts.append(f"in {wait.function}")
    if wait.file:
        where = wait.file.rsplit("/", 1)[-1] + (f":{wait.line}" if wait.line is not None else "")
        parts.append(f"at {where}")
    return " ".join(parts)


def waiting_for(wait: JobWait | None) -> str:
    """"for rank 1 in ... at ...", else "for its peers in ... at ..."."""
    what = wait_text(wait)
    return what if wait is not None and wait.peer is not None else f"for its peers {what}".rstrip()


def _reason(rank: RankVerdict) -> tuple:
    """What makes two crashes the same: the frames of their signatures (not the signal part,
    which a partly pasted block may lack, nor the hash over both), else the kind and signal."""
    if rank.signature:
        frames = rank.signature.split(" | ", 1)[-1].rsplit(" #", 1)[0]
        return ("signature", frames)
    return ("kind", rank.fault_kind, rank.signal)


def _order(rank: RankVerdict) -> tuple:
    return (rank.died is None, rank.died or 0, rank.rank is None, rank.rank or 0)


def _what(rank: RankVerdict) -> str:
    if rank.summary:
        return rank.summary.rstrip(".")
    return " ".join(x for x in (rank.signal, rank.fault_kind) if x and x != "unknown") or "a crash"


def job_verdict(ranks: list[RankVerdict], world_size: int | None = None, launcher_root_cause: int | None = None) -> JobVerdict:
    ranks = sorted(ranks, key=lambda r: (r.rank is None, r.rank or 0))
    known = {r.rank for r in ranks if r.rank is not None}
    missing = [r for r in range(world_size) if r not in known] if world_size and world_size <= 1 << 16 else []
    verdict = JobVerdict(ranks=ranks, missing=missing, launcher_root_cause=launcher_root_cause)
    crashed = sorted((r for r in ranks if r.state == "crashed"), key=_order)
    stuck = [r for r in ranks if r.state == "stuck"]
    waiting = [r for r in ranks if r.state == "waiting"]
    if crashed:
        first = crashed[0]
        root = [r for r in crashed if _reason(r) == _reason(first)]
        verdict.root_cause = sorted(r.rank for r in root if r.rank is not None)
        same = " for the same reason" if len(root) > 1 else ""
        text = f"{_ranks_word(verdict.root_cause)} crashed on {'their' if len(root) > 1 else 'its'} own{same} ({_what(first)})"
        others = [r for r in crashed if r not in root]
        if others:
            text += f"; {_ranks_word([r.rank for r in others])} crashed later for another reason"
    elif stuck and waiting:
        verdict.root_cause = [r.rank for r in stuck if r.rank is not None]
        text = f"no rank crashed: {_ranks_word([r.rank for r in stuck])} hung outside any collective ({wait_text(stuck[0].waited) or 'see its threads'}) while the others waited for it"
    else:
        verdict.single = False
        blocked = waiting + stuck
        if blocked and len(blocked) == len(ranks):
            where = sorted({wait_text(r.waited) for r in blocked if r.waited is not None} - {""})
            text = f"no single rank: all {len(blocked)} ranks were waiting" + (f" ({'; '.join(where[:3])})" if where else "")
            text += ": a deadlock among them" if not missing else ""
        else:
            text = "no single rank: no rank crashed on its own"
    if missing:
        text += f"; {_ranks_word(missing)} of {world_size} left nothing to read (a lost host, or a rank that ended without a core)"
    waited = [r for r in waiting if r.rank not in verdict.root_cause]
    # A task that serves whoever calls it (a parameter server) waited for no one: it kept serving.
    serving = [r for r in waited if r.waited is not None and r.waited.serving]
    waited = [r for r in waited if r not in serving]
    if verdict.single and waited:
        # A rank known to wait for another that is no root cause (its memory or its log names
        # that one) waited for that rank, not for the root cause: in a job of more than two, a
        # wait may be one link of a chain.
        other = [r for r in waited if r.waited is not None and r.waited.peer is not None and r.waited.peer not in verdict.root_cause]
        direct = [r for r in waited if r not in other]
        if direct:
            text += f"; {_ranks_word([r.rank for r in direct])} waited for {'them' if len(verdict.root_cause) > 1 else 'it'}"
        for rank in other:
            text += f"; rank {rank.rank} waited for rank {rank.waited.peer}"
    if verdict.single and serving:
        text += f"; {_ranks_word([r.rank for r in serving])} kept serving the job's other tasks"
    killed = [r for r in ranks if r.state == "killed"]
    if killed:
        text += f"; {_ranks_word([r.rank for r in killed])} {'were' if len(killed) > 1 else 'was'} ended while running"
    if launcher_root_cause is not None and verdict.root_cause and launcher_root_cause not in verdict.root_cause:
        text += f" (the launcher named rank {launcher_root_cause}, by exit time alone)"
    verdict.summary = text
    for rank in ranks:
        rank.evidence = rank.evidence or evidence_of(rank, verdict)
    return verdict


def evidence_of(rank: RankVerdict, verdict: JobVerdict) -> list[str]:
    lines = []
    if rank.rank in verdict.root_cause:
        lines.append(f"crashed on its own: {_what(rank)}")
    elif rank.state == "crashed":
        lines.append(f"crashed too, for another reason: {_what(rank)}")
    elif rank.state in ("waiting", "stuck"):
        what = wait_text(rank.waited)
        if rank.state == "waiting" and rank.waited is not None and rank.waited.serving:
            lines.append(f"kept serving the job's other tasks {what}".rstrip())
        elif rank.state == "waiting":
            lines.append(f"waited {waiting_for(rank.waited)}")
        else:
            lines.append("was blocked outside any collective" + (f" {what}" if what else ""))
        if rank.waited is not None and rank.waited.message:
            lines.append(f"said: {rank.waited.message}")
    elif rank.state == "killed":
        lines.append("was ended while running")
    if rank.signal and rank.rank not in verdict.root_cause:
        lines.append(f"ended by {rank.signal}" + (f" from {rank.sent_by}" if rank.sent_by else ""))
    if rank.died is not None:
        lines.append(f"died {_ordinal(rank.died)} of the ranks read")
    return lines


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
