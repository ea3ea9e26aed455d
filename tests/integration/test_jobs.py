"""Real multi-process jobs, a kernel-written core for every rank: a batch over a job's cores names
the rank that crashed on its own as the root cause and every other rank as waiting for it, with
what it waited in, and counts the job once; the job's console output pasted into triage names
the same rank. TensorFlow MultiWorkerMirroredStrategy (a worker CHECK-fails in LRNGrad, the
other waits in the all-reduce) and PyTorch gloo ranks under torchrun (one rank faults while the
other waits in the all-reduce; both ranks fault the same way; both wait on each other), and JAX's
multi-process CPU runtime (one process faults while the others wait in the all-reduce; each waits
at a barrier the other never reaches), and a TensorFlow ParameterServerStrategy job of four tasks
whose worker faults (the chief's coordinator waits for its recovery, the other tasks serve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli

from coreanalyze.triage import triage_text

# scenario -> (root-cause ranks, the waiting ranks' collective)
EXPECTED = {
    # The crash is in the job's first step: no thread of the waiting worker is inside its all-reduce.
    "tf_one_crash": ([1], "TensorFlow multi-worker step (its collectives wait on the other tasks)"),
    "torch_one_crash": ([1], "torch.distributed.all_reduce"),
    "torch_same_crash": ([0, 1], None),
    "torch_deadlock": ([], "torch.distributed.recv"),
}


def _batch(job_cores, out: Path, names, counted: str) -> tuple[dict, dict]:
    """One batch over the cores of the named jobs; `counted` is the line it must print."""
    runs = {name: job_cores.get(name) for name in names}
    cores = [str(core) for run in runs.values() for core in run.cores.values()]
    batch = run_cli("batch", *cores, "--out", str(out), "--jobs", "2", "--timeout", "300")
    assert batch.code == 0, batch.stderr
    assert counted in batch.stdout
    summary = json.loads((out / "summary.json").read_text())
    summary["_out"] = str(out)
    return runs, summary


@pytest.fixture(scope="module")
def jobs_batch(job_cores, tmp_path_factory) -> tuple[dict, dict]:
    return _batch(job_cores, tmp_path_factory.mktemp("jobs-batch") / "out", EXPECTED, "4 jobs of several processes (8 cores)")


def _job_of(summary: dict, run) -> dict:
    paths = {str(p) for p in run.cores.values()}
    found = [j for j in summary["jobs"] if {r["core"] for r in j["ranks"]} == paths]
    assert len(found) == 1, summary["jobs"]
    return found[0]


@pytest.mark.tf
@pytest.mark.parametrize("name", list(EXPECTED))
def test_batch_names_the_root_cause_rank_and_the_waiting_ranks(jobs_batch, name):
    runs, summary = jobs_batch
    run = runs[name]
    job = _job_of(summary, run)
    root, collective = EXPECTED[name]
    assert job["root_cause"] == root and job["world_size"] == 2 and job["cores"] == 2
    ranks = {r["rank"]: r for r in job["ranks"]}
    assert {r: ranks[r]["pid"] for r in ranks} == run.pids
    for rank in root:
        assert ranks[rank]["state"] == "crashed"
    if root:
        assert job["single"] and job["summary"].startswith(("rank 1 crashed on its own", "ranks 0 and 1 crashed on their own for the same reason"))
    else:
        assert not job["single"] and job["summary"].startswith("no single rank: all 2 ranks were waiting")
    for rank in run.waiting:
        waiting = ranks[rank]
        assert waiting["state"] == "waiting" and waiting["signal"] == "SIGABRT"
        assert waiting["waited"]["collective"] == collective
        assert waiting["waited"]["peer"] == 1 - rank  # in a job of two, the other rank
        # The Python line that called it: the job's own program, not a library.
        assert Path(waiting["waited"]["file"]).name in ("tf_worker.py", "torch_rank.py") and waiting["waited"]["line"]
        # The test's watchdog sent it: the parent of the TensorFlow workers, no rank of the job.
        assert waiting["sent_by"] and "rank" not in waiting["sent_by"]
    if root and run.waiting:  # the crashing rank's core was written first
        assert ranks[root[0]]["died"] == 1 and all(ranks[r]["died"] > 1 for r in run.waiting)


@pytest.mark.tf
def test_batch_counts_each_job_once(jobs_batch):
    _, summary = jobs_batch
    groups = {g["fault_kind"]: g for g in summary["groups"]}
    assert summary["totals"]["analyzed"] == 8 and summary["totals"]["groups"] == 3
    # Two torch jobs whose root cause is the same null dereference: one group, two events.
    assert groups["null-deref"]["count"] == 2 and groups["null-deref"]["job_cores"] == 4
    assert groups["check-failure"]["count"] == 1 and groups["check-failure"]["job_cores"] == 2
    assert groups["hang"]["count"] == 1 and len(groups["hang"]["cores"]) == 1  # the trend counts the job once
    assert sum(g["count"] for g in summary["groups"]) == 4
    # The index and summary.md list each job's ranks under its root cause's group.
    out = Path(summary["_out"])
    index, markdown = (out / "index.html").read_text(), (out / "summary.md").read_text()
    for job in summary["jobs"]:
        assert job["id"] in index and job["id"] in markdown
    assert index.count("<b>root cause</b>") == 4 and "4 jobs of several processes" in markdown


@pytest.mark.tf
def test_each_core_report_names_its_job_and_rank(jobs_batch):
    runs, summary = jobs_batch
    run = runs["torch_one_crash"]
    job = _job_of(summary, run)
    assert {r["rank"]: bool(r["report_html"]) for r in job["ranks"]} == {0: True, 1: True}
    ids = set()
    for rank, core in run.cores.items():
        data = analyze_json(core)
        assert data["job"]["rank"] == rank and data["job"]["world_size"] == 2 and data["job"]["launcher"] == "torchrun"
        assert data["job"]["state"] == ("crashed" if rank == 1 else "waiting")
        ids.add(data["job"]["id"])
    assert len(ids) == 1 and next(iter(ids)).startswith("torchrun:")


@pytest.mark.tf
@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_jobs_pasted_output_gives_the_same_root_cause(job_cores, name):
    run = job_cores.get(name)
    report = triage_text(run.log, name)
    assert report.job is not None, run.log[-3000:]
    verdict = report.job.verdict
    root, _ = EXPECTED[name]
    assert verdict.root_cause == root, verdict.summary
    if name == "torch_one_crash":
        # torchrun's own "Root Cause (first observed failure)" is whichever exit it saw first.
        assert report.core.signal.name == "SIGSEGV"
    if name == "tf_one_crash":
        assert str(report.classification.fault_kind) == "check-failure"
    if not root:  # every rank waited: the job hung, as the batch of its cores says
        assert str(report.classification.fault_kind) == "hang"


# JAX's multi-process CPU runtime: three processes, process 1 faults while 0 and 2 wait for it in
# the all-reduce; two processes that each wait at a barrier the other never reaches.
JAX_EXPECTED = {
    "jax_one_crash": ([1], "gloo (allreduce)", 3),
    "jax_deadlock": ([], "XLA WaitAtBarrier", 2),
}


@pytest.fixture(scope="module")
def jax_batch(job_cores, tmp_path_factory) -> tuple[dict, dict]:
    return _batch(job_cores, tmp_path_factory.mktemp("jax-jobs-batch") / "out", JAX_EXPECTED, "2 jobs of several processes (5 cores)")


@pytest.mark.parametrize("name", list(JAX_EXPECTED))
def test_jax_batch_names_the_crashing_process_and_the_waiting_ones(jax_batch, name):
    runs, summary = jax_batch
    run = runs[name]
    job = _job_of(summary, run)
    root, collective, size = JAX_EXPECTED[name]
    assert job["root_cause"] == root and job["world_size"] == size and job["cores"] == size
    assert job["id"].startswith("jax:127.0.0.1:")
    ranks = {r["rank"]: r for r in job["ranks"]}
    assert {r: ranks[r]["pid"] for r in ranks} == run.pids
    if root:
        assert ranks[1]["state"] == "crashed" and ranks[1]["signal"] == "SIGSEGV"
        assert job["single"] and job["summary"].startswith("rank 1 crashed on its own") and "ranks 0 and 2 waited for it" in job["summary"]
        assert ranks[1]["died"] == 1 and all(ranks[r]["died"] > 1 for r in run.waiting)
    else:
        assert not job["single"] and job["summary"].startswith("no single rank: all 2 ranks were waiting")
    assert run.waiting == [r for r in range(size) if r not in root]
    for rank in run.waiting:
        waiting = ranks[rank]
        assert waiting["state"] == "waiting" and waiting["signal"] == "SIGABRT"
        assert waiting["waited"]["collective"] == collective
        assert Path(waiting["waited"]["file"]).name == "jax_process.py" and waiting["waited"]["line"]
        assert waiting["sent_by"] and "rank" not in waiting["sent_by"]


def test_jax_batch_counts_each_job_once(jax_batch):
    _, summary = jax_batch
    groups = {g["fault_kind"]: g for g in summary["groups"]}
    assert summary["totals"]["analyzed"] == 5 and summary["totals"]["groups"] == 2
    assert groups["null-deref"]["count"] == 1 and groups["null-deref"]["job_cores"] == 3
    assert groups["hang"]["count"] == 1 and len(groups["hang"]["cores"]) == 1


def test_each_jax_core_names_its_job_from_the_command_line(jax_batch):
    runs, summary = jax_batch
    ids = set()
    # Each core's own report, as the batch wrote it beside its HTML.
    for entry in _job_of(summary, runs["jax_one_crash"])["ranks"]:
        report = Path(summary["_out"]) / Path(entry["report_html"]).with_suffix(".json")
        job, rank = json.loads(report.read_text())["job"], entry["rank"]
        # jax.distributed.initialize's arguments, as the program took them on its command line.
        assert (job["rank"], job["world_size"], job["launcher"]) == (rank, 3, "jax")
        assert "--process_id" in job["variables"] and job["master"].startswith("127.0.0.1:")
        assert job["state"] == ("crashed" if rank == 1 else "waiting")
        ids.add(job["id"])
    assert len(ids) == 1


@pytest.mark.parametrize("name", list(JAX_EXPECTED))
def test_the_jax_jobs_pasted_output_gives_the_same_root_cause(job_cores, name):
    run = job_cores.get(name)
    report = triage_text(run.log, name)
    assert report.job is not None, run.log[-3000:]
    root, _, _ = JAX_EXPECTED[name]
    assert report.job.verdict.root_cause == root, report.job.verdict.summary
    if root:
        assert report.core.signal.name == "SIGSEGV"
    else:  # the watchdog's SIGABRT is not the cause: the job hung, as the batch of its cores says
        assert str(report.classification.fault_kind) == "hang"


# The environment when the process died: a rank that set its launcher's variables itself.


def test_a_rank_that_sets_its_variables_itself_is_read_from_libcs_environ(tmp_path):
    from support.coregen import compile_c, run_to_core
    from support.paths import JOBS

    exe = compile_c(JOBS / "setenv_crash.c", tmp_path / "setenv_crash")
    case = run_to_core("setenv_crash", [str(exe)], tmp_path / "run", env={"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "DROPPED": "yes"})
    report = analyze_json(case.core)
    job = report["job"]
    # RANK and WORLD_SIZE were set after the start; MASTER_ADDR's later value wins over the first.
    assert (job["rank"], job["world_size"], job["master"], job["state"]) == (1, 4, "10.0.0.7:29500", "crashed")
    names = report["environment"]["environment_variable_names"]
    assert "PYTEST_CURRENT_TEST" in names and "RANK" in names and "DROPPED" not in names
    values = run_cli(str(case.core), "--include-env", "--format", "json", "-o", "-").json["environment"]["environment_variables"]
    assert values["PYTEST_CURRENT_TEST"] == "tests/test_model.py::test_forward (call)" and values["MASTER_PORT"] == "29500"


def test_a_python_rank_that_sets_os_environ_is_read_from_the_interpreters_environ(tmp_path):
    import sys

    from support.coregen import run_to_core
    from support.paths import JOBS

    case = run_to_core("environ_crash", [sys.executable, str(JOBS / "environ_crash.py")], tmp_path, env={"DROPPED": "yes", "RANK": "0"})
    report = analyze_json(case.core, "--include-env")
    job = report["job"]
    assert (job["rank"], job["world_size"], job["master"], job["state"]) == (2, 3, "10.0.0.9:29400", "crashed")
    values = report["environment"]["environment_variables"]
    assert values["PYTEST_CURRENT_TEST"] == "tests/test_model.py::test_forward (call)" and "DROPPED" not in values
    # What `--redact` looks for is the environment when it died, not only the one it started with:
    # whether setenv's heap copy falls in a kept grain depends on the layout, this does not.
    from coreanalyze.pipeline.analyze import analyze_core
    from coreanalyze.process.process import Process
    from coreanalyze.shrink.redact import needles

    with Process.open(str(case.core), analyze_core(str(case.core)).report.modules) as process:
        looked_for = {needle for needle, _ in needles(process).environment}
    assert {b"MASTER_ADDR=10.0.0.9", b"RANK=2", b"PYTEST_CURRENT_TEST=tests/test_model.py::test_forward (call)"} <= looked_for
    # A shrunk core keeps the strings the job's identity read; `--redact` keeps none of their values.
    for redact in ((), ("--redact",)):
        small = tmp_path / f"small{len(redact)}.core"
        shrunk = run_cli("shrink", str(case.core), "-o", str(small), *redact)
        assert shrunk.code == 0, shrunk.stderr
        data = small.read_bytes()
        if redact:
            # The environment's strings are blanked; the script's own constants (the same text in
            # its code objects, which the Python stacks keep) are program, not environment.
            assert b"MASTER_ADDR=10.0.0.9" not in data and b"PYTEST_CURRENT_TEST=tests/test_model.py::test_forward" not in data
        else:
            assert analyze_json(small)["job"] == job


@pytest.mark.tf
def test_each_tf_worker_names_its_job_and_rank_however_tf_config_reached_it(jobs_batch):
    """Worker 0 set TF_CONFIG itself (os.environ), worker 1 had it from its launcher; worker 0,
    whose step waits on worker 1 with no thread inside a collective, reads as waiting for it."""
    runs, summary = jobs_batch
    ids = set()
    for entry in _job_of(summary, runs["tf_one_crash"])["ranks"]:
        report = json.loads((Path(summary["_out"]) / Path(entry["report_html"]).with_suffix(".json")).read_text())
        job = report["job"]
        assert (job["rank"], job["world_size"], job["launcher"], job["role"]) == (entry["rank"], 2, "tensorflow", "worker")
        assert job["variables"] == ["TF_CONFIG"] and job["address"].startswith("localhost:")
        ids.add(job["id"])
        if entry["rank"] == 0:
            assert report["classification"]["hang"]["rule"] == "multi-worker-step-waits-for-peers"
            assert "collectives wait on the job's other tasks" in report["classification"]["summary"]
            evidence = report["classification"]["evidence"][-1]
            assert evidence.startswith(f"Rank 0 of 2 (worker) of job {job['id']}: it was waiting for rank 1 in TensorFlow multi-worker step")
            assert "at tf_worker.py:" in evidence
    assert len(ids) == 1 and next(iter(ids)).startswith("tf:")


# ParameterServerStrategy: chief, two workers and a parameter server, ranked as a core's TF_CONFIG
# ranks them; worker 1 (rank 2) faults once the chief has run its first steps. The chief's
# coordinator logs the failure, waits for the worker's recovery and trains on with worker 0; the
# watchdog then ends the chief and the two tasks that serve.
PS_JOB = "tf_ps_worker_crash"
PS_ROLES = {0: "chief", 1: "worker", 2: "worker", 3: "ps"}
PS_FAILED = 2
SERVING = "TensorFlow server (Server.join: serving the coordinator's steps)"


@pytest.fixture(scope="module")
def ps_batch(job_cores, tmp_path_factory) -> tuple[dict, dict]:
    return _batch(job_cores, tmp_path_factory.mktemp("ps-job-batch") / "out", [PS_JOB], "of several processes (4 cores)")


@pytest.mark.tf
def test_ps_batch_names_the_failed_worker_and_what_each_other_task_waited_in(ps_batch):
    runs, summary = ps_batch
    run = runs[PS_JOB]
    job = _job_of(summary, run)
    assert job["root_cause"] == [PS_FAILED] and job["world_size"] == 4 and job["cores"] == 4 and job["single"]
    assert job["summary"].startswith(f"rank {PS_FAILED} crashed on its own (SIGSEGV null-deref") and "rank 0 waited for it" in job["summary"]
    # The other worker and the parameter server waited for no one: they served whoever called.
    assert job["summary"].endswith("; ranks 1 and 3 kept serving the job's other tasks")
    ranks = {r["rank"]: r for r in job["ranks"]}
    assert {r: ranks[r]["pid"] for r in ranks} == run.pids and run.waiting == [0, 1, 3]
    failed = ranks[PS_FAILED]
    assert failed["state"] == "crashed" and failed["signal"] == "SIGSEGV" and failed["died"] == 1
    for rank in run.waiting:
        waiting = ranks[rank]
        assert waiting["state"] == "waiting" and waiting["signal"] == "SIGABRT" and waiting["died"] > 1
        assert waiting["sent_by"] and "rank" not in waiting["sent_by"]
        assert Path(waiting["waited"]["file"]).name == "tf_ps_task.py" and waiting["waited"]["line"]
    # The chief waits for the failed worker: which one, its memory says (the error of its call to
    # it), not a guess among three others.
    chief = ranks[0]["waited"]
    assert chief["collective"].startswith("TensorFlow ClusterCoordinator (WorkerPreemptionHandler.") and chief["peer"] == PS_FAILED
    assert "remote target /job:worker/replica:0/task:1" in chief["message"]
    assert ranks[0]["evidence"][0] == f"waited for rank {PS_FAILED} in {chief['collective']} at tf_ps_task.py:{chief['line']}"
    # The other worker and the parameter server serve whoever calls: no peer of their own.
    for rank in (1, 3):
        assert ranks[rank]["waited"]["collective"] == SERVING and ranks[rank]["waited"]["peer"] is None and ranks[rank]["waited"]["serving"]
        assert ranks[rank]["evidence"][0].startswith(f"kept serving the job's other tasks in {SERVING}")
    groups = summary["groups"]
    assert summary["totals"]["analyzed"] == 4 and len(groups) == 1
    assert groups[0]["fault_kind"] == "null-deref" and groups[0]["count"] == 1 and groups[0]["job_cores"] == 4


@pytest.mark.tf
def test_each_ps_task_core_names_its_job_role_and_rank(ps_batch):
    runs, summary = ps_batch
    ids = set()
    for entry in _job_of(summary, runs[PS_JOB])["ranks"]:
        report = json.loads((Path(summary["_out"]) / Path(entry["report_html"]).with_suffix(".json")).read_text())
        job, rank = report["job"], entry["rank"]
        assert (job["rank"], job["world_size"], job["launcher"], job["role"]) == (rank, 4, "tensorflow", PS_ROLES[rank])
        assert job["variables"] == ["TF_CONFIG"] and job["address"].startswith("localhost:")
        assert job["state"] == ("crashed" if rank == PS_FAILED else "waiting")
        ids.add(job["id"])
        cls = report["classification"]
        if rank == 0:
            assert cls["fault_kind"] == "hang" and cls["hang"]["rule"] == "coordinator-waits-for-failed-worker"
            assert cls["summary"].startswith("hang: a ParameterServerStrategy coordinator waits for a failed worker to come back")
            assert any(e.startswith(f"Its memory holds the error of a call to rank {PS_FAILED} (") for e in cls["evidence"])
            assert any(e.startswith(f"Rank 0 of 4 (chief) of job {job['id']}: it was waiting for rank {PS_FAILED}") for e in cls["evidence"])
        elif rank == PS_FAILED:
            assert cls["fault_kind"] == "null-deref" and report["core"]["signal"]["name"] == "SIGSEGV"
        else:
            assert cls["fault_kind"] == "hang"
    assert len(ids) == 1 and next(iter(ids)).startswith("tf:")


@pytest.mark.tf
def test_the_ps_jobs_pasted_output_gives_the_same_root_cause(job_cores):
    """The tasks' lines as srun --label prints them (task numbers as TF_CONFIG ranks the tasks),
    with srun's line for each task a signal ended: only the chief's coordinator names the failed
    worker, as /job:worker/replica:0/task:1."""
    run = job_cores.get(PS_JOB)
    report = triage_text(run.log, PS_JOB)
    assert report.job is not None, run.log[-3000:]
    verdict = report.job.verdict
    assert verdict.root_cause == [PS_FAILED] and verdict.single, verdict.summary
    ranks = {r.rank: r for r in verdict.ranks}
    assert ranks[PS_FAILED].state == "crashed" and ranks[PS_FAILED].signal == "SIGSEGV"
    assert ranks[0].state == "waiting" and ranks[0].waited.peer == PS_FAILED and "task:1 failed with" in ranks[0].waited.message
    # The wait the coordinator's line was printed from, named as the chief's core names it.
    assert ranks[0].waited.collective.startswith("TensorFlow ClusterCoordinator (WorkerPreemptionHandler.wait_on_failure:")
    assert report.core.signal.name == "SIGSEGV"


@pytest.mark.tf
def test_the_chiefs_shrunk_core_still_names_the_worker_it_waited_for(job_cores, tmp_path):
    """The strings its memory held of the failed calls are what a shrunk core keeps of that search."""
    run = job_cores.get(PS_JOB)
    small = tmp_path / "chief.core"
    shrunk = run_cli("shrink", str(run.cores[0]), "-o", str(small))
    assert shrunk.code == 0, shrunk.stderr
    assert small.stat().st_size < run.cores[0].stat().st_size // 20
    job = analyze_json(small)["job"]
    assert (job["rank"], job["role"], job["state"], job["waited"]["peer"]) == (0, "chief", "waiting", PS_FAILED)
