"""report.job for one core: its job and rank from the environment in its memory, and its part in
the job's failure (crashed, waiting and in what, ended by whom), with one evidence line."""

from __future__ import annotations

from typing import Mapping, Sequence

from coreanalyze.base.model import JobInfo, Report
from coreanalyze.jobs.identity import job_of_environment
from coreanalyze.jobs.verdict import waiting_for
from coreanalyze.jobs.waiting import rank_state, sender_of


def add_job(report: Report, environ: Mapping[str, str] | None, argv: Sequence[str] = (), current: Mapping[str, str] | None = None) -> None:
    """environ: the environment the process started with; current: the one it had when it died
    (Process.current_environment), whose values win: a script that sets TF_CONFIG or RANK
    itself (`os.environ[...] = ...`) is that rank, though its launcher did not say so. A
    variable the process removed is still read from the initial one: it was started as that rank."""
    environ = {**(environ or {}), **(current or {})}
    if not environ and not argv:
        return
    job = job_of_environment(environ, environ.get("HOSTNAME"), argv)
    if job is None:
        return
    job.state, job.waited = rank_state(report)
    if job.waited is not None and job.waited.peer is None:
        job.waited.peer = only_peer(job)
    if job.state != "crashed":
        job.sent_by = sender_of(report)
    report.job = job
    report.classification.evidence.append(evidence_line(report))


def only_peer(job: JobInfo) -> int | None:
    """The rank a rank of two waited for: the other one. With more, which peer a pending receive
    waits for is in the collective library's own structures (TensorFlow's, gloo's), which have no
    debug info and change with every build: not read."""
    if job.world_size == 2 and job.rank in (0, 1):
        return 1 - job.rank
    return None


def evidence_line(report: Report) -> str:
    job = report.job
    size = f" of {job.world_size}" if job.world_size is not None else ""
    role = f" ({job.role})" if job.role else ""
    text = f"Rank {job.rank if job.rank is not None else '?'}{size}{role} of job {job.id or '?'}"
    if job.state == "waiting":
        text += f": it was waiting {waiting_for(job.waited)}"
    elif job.state == "stuck":
        text += ": it was blocked outside any collective"
    elif job.state == "crashed":
        text += ": it crashed on its own; the job's other ranks may have left cores that wait for it (`coreanalyze batch` reads them as one job)"
    if job.sent_by:
        text += f"; the signal came from {job.sent_by}"
    return text
