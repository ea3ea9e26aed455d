"""What TensorFlow's distributed runtime says in one task's log about the other tasks of its job.

A MultiWorkerMirroredStrategy (or ParameterServerStrategy) task that outlives a failed peer says
so in its own words: the coordination service on the leader names the tasks that stopped sending
heartbeats, gRPC names the remote task of a call that failed, the collective is aborted
(`Collective ops is aborted by: ...`, `[[{{node CollectiveReduceV2}}]]`), and the Python
traceback shows the program's line of the step. Tasks are named as `/job:worker/replica:0/
task:1`; a job's rank is its place in the collective: the chief first, then the workers
(coreanalyze/jobs/identity.py). The rules naming failed tasks are data (jobs/rules.toml).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coreanalyze.base.model import Frame, Thread
from coreanalyze.base.vocabulary import FrameKind
from coreanalyze.jobs.rules import JobRules
from coreanalyze.jobs.waiting import collective_in, program_line

# "[[{{node CollectiveReduceV2}}]]", "[[{{node allreduce/CollectiveReduceV2_1}}]]".
_NODE = re.compile(r"\{\{node ([\w/.-]{1,200})\}\}")
# A Python traceback's frame line.
_PY_FRAME = re.compile(r'^\s*File "([^"]{1,400})", line (\d{1,9}), in (\S{1,200})')
# A job with a chief: its tasks named, or a ParameterServerStrategy job (its parameter servers
# named, or its coordinator's words for a failed worker), whose coordinator runs on the chief.
_CHIEF = re.compile(r"/job:chief/|/job:ps/|ERROR:tensorflow:Worker /job:\w+/\S* failed with")
MAX_SCANNED_CHARS = 1 << 20  # of one task's lines, from its end: what it said last


# A task names itself when its eager service starts serving the coordinator (ParameterServerStrategy's
# workers and parameter servers): "Creating sync eager service context with rendezvous_id on host
# vm /job:ps/replica:0/task:0".
_OWN_TASK = re.compile(r"eager service context with rendezvous_id on host \S{1,200} /job:(\w{1,40})/replica:\d{1,6}/task:(\d{1,6})")


@dataclass(frozen=True)
class FailedTask:
    rank: int  # the failed task's rank in the job
    says: str  # what became of it, in the verdict's words
    line: str  # the line that said so


def own_task(lines: list[str]) -> tuple[str, int] | None:
    """The task a log's own lines say it is, where TensorFlow says so."""
    for line in lines:
        m = _OWN_TASK.search(line)
        if m:
            return m.group(1), int(m.group(2))
    return None


def task_rank(job: str, task: int, with_chief: bool) -> int | None:
    """The rank of /job:JOB/task:TASK in the collective: the chief is 0, the workers follow;
    a parameter server or an evaluator has no rank among them."""
    if job == "chief":
        return task
    if job == "worker":
        return task + (1 if with_chief else 0)
    return None


def failed_tasks(lines: list[str], rules: JobRules, with_chief: bool, owners: dict[tuple[str, int], int] | None = None) -> list[FailedTask]:
    """The tasks this log says failed, in the order it says so (each once). owners: the rank of
    each task whose own lines named it (own_task); else its rank in the collective's order."""
    text = "\n".join(lines)[-MAX_SCANNED_CHARS:]
    found: dict[int, FailedTask] = {}
    for rule in rules.failed_tasks:
        for match in rule.pattern.finditer(text):
            if rule.leader:
                rank = 0  # the leader: the chief, else worker 0, rank 0 either way
            else:
                task = (match.group("job"), int(match.group("task")))
                rank = (owners or {}).get(task)
                rank = task_rank(*task, with_chief) if rank is None else rank
            if rank is not None:
                found.setdefault(rank, FailedTask(rank, rule.says, _line_at(text, match.start())))
    return sorted(found.values(), key=lambda f: text.find(f.line))


def _line_at(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : end if end >= 0 else len(text)].strip()[:300]


def mentions_chief(text: str) -> bool:
    """Whether the job has a chief, ranked 0 before the workers, as far as its log says."""
    return _CHIEF.search(text) is not None


def aborted_collective(lines: list[str], rules: JobRules) -> str | None:
    """The collective op of the step that was aborted, named as a core's frames would name it."""
    for line in reversed(lines):
        for node in reversed(_NODE.findall(line)):
            frame = Frame(index=0, kind=FrameKind.NATIVE, function=node.rsplit("/", 1)[-1])
            name, _ = collective_in([_thread(frame)], None, rules)
            if name:
                return name
    return None


def logged_wait(lines: list[str], rules: JobRules) -> str | None:
    """The wait a task's lines say it was in (a line its wait printed: jobs/rules.toml
    [[logged_wait]]), named as a core's frames would name it."""
    for line in reversed(lines):
        for rule in rules.logged_waits:
            if rule.pattern.search(line):
                frame = Frame(index=0, kind=FrameKind.PYTHON, function=rule.function, file=rule.file)
                name, _ = collective_in([_thread(frame)], None, rules)
                if name:
                    return name
    return None


def step_line(lines: list[str]) -> Frame | None:
    """The program's own innermost line of the last Python traceback (the step that raised)."""
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")), default=None)
    if start is None:
        return None
    frames = []
    for line in lines[start + 1 :]:
        m = _PY_FRAME.match(line)
        if m:
            frames.append(Frame(index=0, kind=FrameKind.PYTHON, file=m.group(1), line=int(m.group(2)), function=m.group(3)))
        elif line and not line[0].isspace():
            break  # the exception's own line ends the traceback
    return program_line(_thread(*reversed(frames)))


def _thread(*frames: Frame) -> Thread:
    return Thread(tid=0, frames=list(frames))
