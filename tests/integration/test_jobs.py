"""Real multi-process jobs, a kernel-written core for every rank: a batch over a job's cores names
the rank that crashed on its own as the root cause and every other rank as waiting for it, with
what it waited in, and counts the job once; the job's console output pasted into triage names
the same rank. TensorFlow MultiWorkerMirroredStrategy (a worker CHECK-fails in LRNGrad, the
other waits in the all-reduce) and PyTorch gloo ranks under torchrun (one rank faults while the
other waits in the all-reduce; both ranks fault the same way; both wait on each other)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli

from coreanalyze.triage import triage_text

# scenario -> (root-cause ranks, the waiting ranks' collective)
EXPECTED = {
    "tf_one_crash": ([1], "TensorFlow all-reduce (RingReducer)"),
    "torch_one_crash": ([1], "torch.distributed.all_reduce"),
    "torch_same_crash": ([0, 1], None),
    "torch_deadlock": ([], "torch.distributed.recv"),
}


@pytest.fixture(scope="module")
def jobs_batch(job_cores, tmp_path_factory) -> tuple[dict, dict]:
    runs = {name: job_cores.get(name) for name in EXPECTED}
    out = tmp_path_factory.mktemp("jobs-batch") / "out"
    cores = [str(core) for run in runs.values() for core in run.cores.values()]
    batch = run_cli("batch", *cores, "--out", str(out), "--jobs", "2", "--timeout", "300")
    assert batch.code == 0, batch.stderr
    assert "4 jobs of several processes (8 cores)" in batch.stdout
    summary = json.loads((out / "summary.json").read_text())
    summary["_out"] = str(out)
    return runs, summary


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
