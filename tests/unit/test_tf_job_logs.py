"""Triage of a real TensorFlow job's logs (tests/data/tfjob, see its README): TensorFlow's and
gRPC's own lines name the task that failed first, in every shape the logs are pasted in: srun
--label's, torchrun's `[rankN]:`, per-worker files one after the other as `tail` prints them, and
the surviving worker's log alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paths import DATA

from coreanalyze.triage import triage_text

LOGS = DATA / "tfjob"
# folder -> (the worker that crashed, what the other worker's TensorFlow said of it)
CASES = {"worker1_crashed": (1, "stopped sending heartbeats"), "worker0_crashed": (0, "closed its connection")}


def _own(case: str, rank: int) -> str:
    return (LOGS / case / f"w{rank}" / "out.txt").read_text()


def _pasted(case: str, shape: str) -> str:
    if shape in ("labelled", "tailed"):
        return (LOGS / case / f"{shape}.txt").read_text()
    if shape == "torchrun":  # each rank's lines behind torchrun's "[rankN]:", rank by rank
        return "".join(f"[rank{r}]:{line}\n" for r in (0, 1) for line in _own(case, r).splitlines())
    waiting = 1 - CASES[case][0]  # "survivor": the waiting worker's srun-labelled lines alone
    return "".join(f"{waiting}: {line}\n" for line in _own(case, waiting).splitlines())


@pytest.mark.parametrize("shape", ["labelled", "tailed", "torchrun", "survivor"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_failed_task_is_the_root_cause_and_the_other_waited_for_it(case, shape):
    crashed, said = CASES[case]
    report = triage_text(_pasted(case, shape), f"{case}-{shape}")
    assert report.job is not None
    verdict = report.job.verdict
    assert verdict.root_cause == [crashed] and verdict.single, verdict.summary
    ranks = {r.rank: r for r in verdict.ranks}
    waiting = ranks[1 - crashed]
    assert waiting.state == "waiting" and waiting.waited.peer == crashed
    # The aborted op of the step and the program's line that ran it, from the worker's traceback.
    assert waiting.waited.collective == "TensorFlow CollectiveReduceV2"
    assert Path(waiting.waited.file).name == "tf_worker.py" and waiting.waited.line == 53
    assert f"for rank {crashed}" in waiting.evidence[0]
    if shape == "survivor":
        # Only its peer's words tell of it: what they said, and no crash made up from their lines.
        assert ranks[crashed].state == "crashed" and said in ranks[crashed].summary
        assert str(report.classification.fault_kind) == "unknown" and report.classification.summary.startswith("Job: rank")
    else:
        assert str(report.classification.fault_kind) == "check-failure" and "LRNGrad" in report.classification.summary


@pytest.mark.parametrize("shape", ["labelled", "tailed"])
def test_a_parameter_server_that_died_is_the_root_cause_of_its_job(shape):
    """ParameterServerStrategy: the parameter server faulted; the chief's coordinator raised and
    the workers' receives were cancelled: they waited for it."""
    report = triage_text((LOGS / "ps0_crashed" / f"{shape}.txt").read_text(), f"ps-{shape}")
    verdict = report.job.verdict
    assert verdict.root_cause == [3] and verdict.single, verdict.summary  # chief 0, workers 1 and 2, ps 3
    ranks = {r.rank: r for r in verdict.ranks}
    assert "could no longer be reached" in ranks[3].summary
    assert all(ranks[r].state == "waiting" for r in (0, 1, 2))
    # The chief names the parameter server (its gRPC calls to it), and its own program's line.
    assert ranks[0].waited.peer == 3 and Path(ranks[0].waited.file).name == "tf_ps_task.py"
    # The parameter server named itself (its eager service's task name), not by a rank's formula.
    assert ranks[2].waited.peer == 3
