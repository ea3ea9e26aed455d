"""report.job for one core: its job and rank from the environment in its memory, and its part in
the job's failure (crashed, waiting and in what, ended by whom), with one evidence line."""

from __future__ import annotations

import re
from typing import Mapping, Sequence

from coreanalyze.base.model import JobInfo, Report
from coreanalyze.jobs.identity import job_of_environment
from coreanalyze.jobs.peers import peer_in_memory
from coreanalyze.jobs.rules import job_rules
from coreanalyze.jobs.verdict import waiting_for
from coreanalyze.jobs.waiting import MAX_FRAMES, rank_state, sender_of
from coreanalyze.process.currentenv import removed_values
from coreanalyze.process.process import Process

# Threads only a task of a TensorFlow job has: its coordination service agent, its gRPC server.
DISTRIBUTED_TENSORFLOW = re.compile(r"^tsl::CoordinationServiceAgent|^tensorflow::GrpcServer|^tsl::GrpcCoordinationServiceImpl")


def add_job(report: Report, process: Process) -> None:
    """The job of the process as it was when it died: its current environment (Process.
    current_environment) over the one it started with, so that a script that sets TF_CONFIG or
    RANK itself (`os.environ[...] = ...`) is that rank, though its launcher did not say so; a
    variable the process removed is still read from the initial one (it was started as that
    rank), or, for a TensorFlow task that removed the TF_CONFIG it set, from the string left in
    its memory (see _removed_tf_config)."""
    environ = {**process.environ, **process.current_environment}
    argv = process.notes.argv or ()
    job = job_of_environment(environ, environ.get("HOSTNAME"), argv) if environ or argv else None
    removed = job is None and "TF_CONFIG" not in environ and _tensorflow_task(report)
    if removed:
        job, environ = _removed_tf_config(process, environ, argv)
    if job is None:
        return
    job.state, job.waited = rank_state(report)
    if job.waited is not None and job.waited.peer is None:
        job.waited.peer = only_peer(job)
    from_memory = None
    if job.waited is not None and job.waited.peer is None and "TF_CONFIG" in job.variables:
        from_memory = _peer_from_memory(job, process, environ)
    if job.state != "crashed":
        job.sent_by = sender_of(report)
    report.job = job
    report.classification.evidence.append(evidence_line(report))
    if from_memory:
        report.classification.evidence.append(from_memory)
    if removed:
        report.classification.evidence.append(
            "TF_CONFIG was no longer in the process's environment: read from the string its setenv left in memory"
        )


def _peer_from_memory(job: JobInfo, process: Process, environ: Mapping[str, str]) -> str | None:
    """A TensorFlow task of more than two that waited: the task its memory says failed under its
    calls (jobs/peers.py) is the one it waited for. Returns the evidence line."""
    peer = peer_in_memory(process, environ, job.rank, job_rules())
    if peer is None:
        return None
    job.waited.peer = peer.rank
    job.waited.message = job.waited.message or peer.line
    return f"Its memory holds the error of a call to rank {peer.rank} ({peer.count}x), which {peer.says}: {peer.line}"


def _tensorflow_task(report: Report) -> bool:
    """A task of a TensorFlow job (its coordination service agent or gRPC server has a thread):
    the only process worth a pass over its heap for a removed TF_CONFIG."""
    return any(DISTRIBUTED_TENSORFLOW.search(f.function or "") for t in report.threads for f in t.frames[:MAX_FRAMES])


def _removed_tf_config(process: Process, environ: dict[str, str], argv: Sequence[str]) -> tuple[JobInfo | None, dict[str, str]]:
    """The job from a TF_CONFIG the process set and removed again: the first value left in its
    memory that names a cluster and this task; with the environment that holds it."""
    for value in removed_values(process, "TF_CONFIG"):
        found = {**environ, "TF_CONFIG": value}
        job = job_of_environment(found, environ.get("HOSTNAME"), argv)
        if job is not None and "TF_CONFIG" in job.variables:
            return job, found
    return None, environ


def only_peer(job: JobInfo) -> int | None:
    """The rank a rank of two waited for: the other one. With more, which peer a pending receive
    waits for is in the collective library's own structures (TensorFlow's, gloo's), which have no
    debug info and change with every build: not read; a TensorFlow task's memory may name it in
    the text of a failed call's error (_peer_from_memory)."""
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
