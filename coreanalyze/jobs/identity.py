"""Which job a process belonged to and its rank in it, from the environment it was started with.

Launchers tell each process who it is through its environment: torchrun (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR/MASTER_PORT, TORCHELASTIC_RUN_ID, ROLE_NAME), TensorFlow's
TF_CONFIG (the cluster's task lists and this task), JAX (the coordinator's address, the
number of processes and this one's id: see _jax), Open MPI and PMIx (OMPI_COMM_WORLD_*, PMIX_NAMESPACE),
MPICH/Intel MPI (PMI_RANK, PMI_SIZE), Horovod (HOROVOD_*), SLURM (SLURM_JOB_ID,
SLURM_STEP_ID, SLURM_PROCID, SLURM_NTASKS). The job's id is the most specific one these give:
the scheduler's job (and step), then the launcher's run, then the address every rank met at.
Every value comes from a core and is untrusted: bounded, parsed, never executed or used as a path.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Mapping, Sequence

from coreanalyze.base.model import JobInfo

MAX_VALUE_CHARS = 200
MAX_TF_CONFIG_CHARS = 64 << 10
MAX_RANK = 1 << 24
MAX_ARGS_SCANNED = 256  # command-line arguments looked at for a JAX program's flags
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]{0,199}$")
# TensorFlow's collective order: the chief is task 0 of the all-reduce, the workers follow; a
# ParameterServerStrategy's parameter servers, and an evaluator, come after them.
TF_COLLECTIVE_ROLES = ("chief", "worker")
TF_TASK_ORDER = (*TF_COLLECTIVE_ROLES, "ps", "evaluator")


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit():
        return None
    number = int(value.strip())
    return number if number < MAX_RANK else None


def _token(value: str | None) -> str | None:
    """A name or address as a launcher writes it; anything else is no id."""
    if value is None:
        return None
    value = value.strip()[:MAX_VALUE_CHARS]
    return value if _TOKEN.match(value) else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _first(env: Mapping[str, str], *names: str) -> tuple[str | None, str | None]:
    for name in names:
        if name in env:
            return env[name], name
    return None, None


def job_of_environment(env: Mapping[str, str], host: str | None = None, argv: Sequence[str] = ()) -> JobInfo | None:
    """The process's job and rank, or None when nothing in its environment (or, for JAX, its
    command line) names one."""
    job = JobInfo(host=_token(host))
    _tf_config(env, job)
    _torchrun(env, job)
    _jax(env, argv, job)
    for reader in (_mpi, _horovod, _slurm):
        reader(env, job)
    if job.rank is None and job.id is None:
        return None
    if job.id is None and job.master is not None:
        # Ranks that met at the same address (and, for torch, agreed on the same size) are one job.
        job.id = f"{job.launcher or 'job'}:{job.master}"
    return job


def _note(job: JobInfo, *names: str | None) -> None:
    for name in names:
        if name and name not in job.variables:
            job.variables.append(name)


def tf_cluster(env: Mapping[str, str]) -> tuple[dict[str, list], str, int] | None:
    """TF_CONFIG's cluster (task type -> addresses) and this task's type and index, or None where
    it names no task."""
    text = env.get("TF_CONFIG")
    if not text or len(text) > MAX_TF_CONFIG_CHARS:
        return None
    try:
        config = json.loads(text)
    except ValueError:
        return None
    if not isinstance(config, dict):
        return None
    cluster, task = config.get("cluster"), config.get("task")
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        return None
    role, index = task.get("type"), task.get("index")
    if not isinstance(role, str) or not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < MAX_RANK:
        return None
    return {k: v for k, v in cluster.items() if isinstance(k, str) and isinstance(v, list)}, role, index


def tf_rank(tasks: Mapping[str, list], role: str, index: int) -> int | None:
    """The rank of task ROLE:INDEX in the cluster: the collective's (chief, workers) first, then
    the parameter servers and the evaluator, so that a batch sees each task of a
    ParameterServerStrategy job once; None for a task the cluster does not hold."""
    if role not in TF_TASK_ORDER or not 0 <= index < len(tasks.get(role, [])):
        return None
    return _tasks_before(tasks, role) + index


def _tasks_before(tasks: Mapping[str, list], role: str) -> int:
    return sum(len(tasks.get(r, [])) for r in TF_TASK_ORDER[: TF_TASK_ORDER.index(role)])


def _tf_config(env: Mapping[str, str], job: JobInfo) -> None:
    found = tf_cluster(env)
    if found is None:
        return
    tasks, role, index = found
    _note(job, "TF_CONFIG")
    job.launcher = job.launcher or "tensorflow"
    job.role = _token(role)
    # The cluster itself names the job: every task of it carries the same lists.
    canonical = json.dumps({k: [str(a)[:MAX_VALUE_CHARS] for a in v[:4096]] for k, v in sorted(tasks.items())}, sort_keys=True)
    job.id = job.id or f"tf:{_digest(canonical)}"
    if role in TF_TASK_ORDER:
        # Every task of the cluster its own rank, in tf_rank's order.
        job.rank = _tasks_before(tasks, role) + index
        job.world_size = sum(len(tasks.get(r, [])) for r in TF_TASK_ORDER) or None
    else:  # a task type TensorFlow does not name: its index among its kind
        job.rank, job.world_size = index, len(tasks.get(role, [])) or None
    own = tasks.get(role, [])
    if index < len(own):
        job.address = _token(str(own[index]))
    leader = tasks.get("chief") or tasks.get("worker") or []
    job.master = job.master or (_token(str(leader[0])) if leader else None)


def _torchrun(env: Mapping[str, str], job: JobInfo) -> None:
    if "RANK" not in env or "WORLD_SIZE" not in env:
        return
    rank, size = _int(env.get("RANK")), _int(env.get("WORLD_SIZE"))
    if rank is None or size is None:
        return
    _note(job, "RANK", "WORLD_SIZE")
    job.rank, job.world_size = rank, size
    job.local_rank = _int(env.get("LOCAL_RANK"))
    _note(job, "LOCAL_RANK" if "LOCAL_RANK" in env else None)
    run_id = _token(env.get("TORCHELASTIC_RUN_ID"))
    if "TORCHELASTIC_RUN_ID" in env:
        job.launcher = "torchrun"
        _note(job, "TORCHELASTIC_RUN_ID")
        restart = _int(env.get("TORCHELASTIC_RESTART_COUNT"))
        if run_id:
            # A restarted attempt is another event of the same run.
            job.id = job.id or f"torchrun:{run_id}" + (f"/attempt-{restart}" if restart else "")
        job.role = job.role or _token(env.get("ROLE_NAME"))
    else:
        job.launcher = job.launcher or "torch"
    addr, port = _token(env.get("MASTER_ADDR")), _int(env.get("MASTER_PORT"))
    if addr:
        job.master = f"{addr}:{port}" if port is not None else addr
        _note(job, "MASTER_ADDR", "MASTER_PORT" if port is not None else None)


def _flags(argv: Sequence[str], names: tuple[str, ...]) -> dict[str, str]:
    """`--name=value` or `--name value` (also spelled with dashes) -> {name: value}, the last one given."""
    found: dict[str, str] = {}
    args = list(argv[:MAX_ARGS_SCANNED])
    for i, arg in enumerate(args):
        if not arg.startswith("--"):
            continue
        key, has_value, value = arg[2:MAX_VALUE_CHARS].partition("=")
        key = key.replace("-", "_")
        if key not in names:
            continue
        if not has_value:
            if i + 1 >= len(args):
                continue
            value = args[i + 1]
        found[key] = value
    return found


# jax.distributed.initialize's keywords, as programs take them on their command line.
JAX_FLAGS = ("coordinator_address", "num_processes", "process_id")


def _jax(env: Mapping[str, str], argv: Sequence[str], job: JobInfo) -> None:
    """jax.distributed.initialize(coordinator_address, num_processes, process_id): JAX itself
    reads only the coordinator from the environment (JAX_COORDINATOR_ADDRESS; an argument
    outranks it), and the process's id and count from a scheduler it recognizes (SLURM and Open MPI,
    read above) or from its arguments, which programs take on their command line under the
    keywords' names. JAX_PROCESS_ID/JAX_NUM_PROCESSES are read too, where a launcher sets them."""
    flags = _flags(argv, JAX_FLAGS)
    coordinator = _token(flags.get("coordinator_address")) or _token(env.get("JAX_COORDINATOR_ADDRESS"))
    rank = _int(flags.get("process_id")) if "process_id" in flags else _int(env.get("JAX_PROCESS_ID"))
    size = _int(flags.get("num_processes")) if "num_processes" in flags else _int(env.get("JAX_NUM_PROCESSES"))
    if coordinator is None and (rank is None or not any(n in env for n in ("JAX_PROCESS_ID", "JAX_NUM_PROCESSES"))):
        # A --process_id alone is any program's flag; with no coordinator, no JAX job.
        return
    _note(job, *(n for n in ("JAX_COORDINATOR_ADDRESS", "JAX_PROCESS_ID", "JAX_NUM_PROCESSES") if n in env))
    _note(job, *(f"--{n}" for n in JAX_FLAGS if n in flags))
    job.launcher = job.launcher or "jax"
    job.rank = job.rank if job.rank is not None else rank
    job.world_size = job.world_size if job.world_size is not None else size
    job.master = job.master or coordinator


def _mpi(env: Mapping[str, str], job: JobInfo) -> None:
    rank_text, rank_name = _first(env, "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
    if rank_name is None:
        return
    size_text, size_name = _first(env, "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
    local_text, local_name = _first(env, "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
    _note(job, rank_name, size_name, local_name)
    job.launcher = job.launcher or "mpi"
    job.rank = job.rank if job.rank is not None else _int(rank_text)
    job.world_size = job.world_size if job.world_size is not None else _int(size_text)
    job.local_rank = job.local_rank if job.local_rank is not None else _int(local_text)
    namespace, name = _first(env, "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid")
    if _token(namespace):
        _note(job, name)
        job.id = job.id or f"mpi:{_token(namespace)}"


def _horovod(env: Mapping[str, str], job: JobInfo) -> None:
    if "HOROVOD_RANK" not in env:
        return
    _note(job, *(n for n in ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK") if n in env))
    job.launcher = "horovod" if job.launcher in (None, "mpi") else job.launcher
    job.rank = job.rank if job.rank is not None else _int(env.get("HOROVOD_RANK"))
    job.world_size = job.world_size if job.world_size is not None else _int(env.get("HOROVOD_SIZE"))
    job.local_rank = job.local_rank if job.local_rank is not None else _int(env.get("HOROVOD_LOCAL_RANK"))
    addr, port = _token(env.get("HOROVOD_GLOO_RENDEZVOUS_ADDR")), _int(env.get("HOROVOD_GLOO_RENDEZVOUS_PORT"))
    if addr:
        _note(job, "HOROVOD_GLOO_RENDEZVOUS_ADDR")
        job.master = job.master or (f"{addr}:{port}" if port is not None else addr)


def _slurm(env: Mapping[str, str], job: JobInfo) -> None:
    """The scheduler's job outranks every launcher's id: it is what the cluster's people use."""
    job_id = _token(env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID"))
    if job_id is None:
        return
    _note(job, "SLURM_JOB_ID" if "SLURM_JOB_ID" in env else "SLURM_JOBID")
    step = _token(env.get("SLURM_STEP_ID") or env.get("SLURM_STEPID"))
    job.id = f"slurm:{job_id}" + (f".{step}" if step else "")
    if job.rank is None and "SLURM_PROCID" in env:
        _note(job, "SLURM_PROCID", "SLURM_NTASKS" if "SLURM_NTASKS" in env else None)
        job.rank = _int(env.get("SLURM_PROCID"))
        job.world_size = job.world_size if job.world_size is not None else _int(env.get("SLURM_NTASKS"))
        job.local_rank = job.local_rank if job.local_rank is not None else _int(env.get("SLURM_LOCALID"))
    job.launcher = job.launcher or "slurm"
