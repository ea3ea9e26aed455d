"""The output of a job's ranks pasted together -> the root-cause rank and its verdict.

A job's log interleaves its ranks: each line behind the prefix its launcher puts there (torchrun's
`[rank0]:` or `--tee`'s `[default0]:`, mpirun's `[1,0]<stderr>:`, srun --label's `0: `), and
the launcher's own statements about each rank:

    torchrun   its failure summary ("Failures:", "Root Cause (first observed failure):", each entry
               with rank, exitcode, pid, host); its Root Cause is by exit time alone
    mpirun     "mpirun noticed that process rank 1 with PID 42 on node n1 exited on signal 11 (...)"
    SLURM      "srun: error: n1: task 1: Segmentation fault (core dumped)"
    NCCL       "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ...)"

Each rank's own lines are triaged alone; a rank that says its peers failed (a collective timeout,
a closed connection: jobs/rules.toml) waited for them; a rank with a crash of its own, or ended by
a fault signal, crashed. The job's verdict (jobs/verdict.py) names the root cause, and the
report is the root-cause rank's own lines triaged, with `job` holding the verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import Frame, JobInfo, JobWait, RankVerdict, Report
from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.jobs.identity import TF_TASK_ORDER
from coreanalyze.jobs.rules import job_rules
from coreanalyze.jobs.verdict import job_verdict
from coreanalyze.jobs.waiting import peer_failure_message
from coreanalyze.triage import limits
from coreanalyze.triage.signals import from_description, normalize_name
from coreanalyze.triage.tf_tasks import (
    FailedTask,
    aborted_collective,
    failed_tasks,
    logged_wait,
    mentions_chief,
    own_task,
    step_line,
)

MAX_RANKS = 4096
TAIL_LINES = 2000  # of a rank's own lines, where it says what became of its peers
# Prefixes that name a rank: torchrun's "[rank3]:" and --tee's "[<role>3]:", mpirun's
# "[jobid,rank]<stderr>:", srun --label's "3: ".
_TORCH_PREFIX = re.compile(r"^\[(?:rank|[A-Za-z_][\w-]{0,40}?)(\d{1,6})\]:\s?")
_MPI_PREFIX = re.compile(r"^\[\d{1,9},(\d{1,6})\]<std(?:out|err)>:\s?")
_SRUN_PREFIX = re.compile(r"^\s{0,3}(\d{1,6}): ")
# Per-rank files pasted one after the other as `tail` (or `head`) prints them: "==> w1/out.txt <==";
# the rank is the last number in the file's name, else the file's place among them.
_FILE_HEADER = re.compile(r"^==> (.{1,400}) <==\s*$")
_LAST_NUMBER = re.compile(r"(\d{1,6})(?!.*\d)")
_TF_TASK_FILE = re.compile(r"(?:^|[/_.-])(chief|worker|ps|evaluator)[-_]?(\d{1,6})?(?:[/_.-]|$)")
# torchrun's failure summary.
_SUMMARY_ENTRY = re.compile(r"^\s*\[(\d{1,6})\]:\s*$")
_SUMMARY_RANK = re.compile(r"^\s*rank\s*:\s*(\d{1,6})(?:\s*\(local_rank:\s*(\d{1,6})\))?")
_SUMMARY_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d{1,4})\s*\(pid:\s*(\d{1,9})\)")
_SUMMARY_HOST = re.compile(r"^\s*host\s*:\s*(\S{1,200})")
_ROOT_CAUSE = re.compile(r"^\s*Root Cause \(first observed failure\):")
# mpirun and srun.
_MPIRUN = re.compile(r"process rank (\d{1,6}) with PID (\d{1,9}) on node (\S{1,200}) exited on signal (\d{1,2})")
_SRUN = re.compile(r"srun: error: (\S{1,200}): tasks? ([\d,\- ]{1,200}): (.{1,200})$")
# "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ...".
_NCCL_RANK = re.compile(r"\[Rank (\d{1,6})\]")
_OP_TYPE = re.compile(r"OpType=(\w{1,40})")
# Signals a process gets only from its own fault: the rank crashed on its own.
FAULT_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS"})
# Signals others send to end a process.
ENDING_SIGNALS = frozenset({"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP"})


@dataclass
class _Rank:
    rank: int
    lines: list[str] = field(default_factory=list)  # its own output, prefixes removed
    about: list[str] = field(default_factory=list)  # the launcher's lines about it
    signal: str | None = None
    exit_code: int | None = None
    pid: int | None = None
    host: str | None = None
    message: str | None = None  # what it (or its launcher) said of its peers
    collective: str | None = None
    peer: int | None = None  # the rank it said failed (TensorFlow's runtime names the task)
    step: Frame | None = None  # the program's line of the step that raised, from its traceback
    failed: FailedTask | None = None  # what another rank's TensorFlow said became of this one


@dataclass
class JobText:
    info: JobInfo  # the job, its root-cause rank and the verdict
    root_text: str | None  # the root-cause rank's own lines and its launcher's lines about it


def _rank(ranks: dict[int, _Rank], number: int) -> _Rank | None:
    if number not in ranks and len(ranks) >= MAX_RANKS:
        return None
    return ranks.setdefault(number, _Rank(number))


def _split(lines: list[str], ranks: dict[int, _Rank]) -> list[str]:
    """Each rank's own lines into its _Rank; the unprefixed lines (the launcher's) returned."""
    if sum(1 for line in lines if _FILE_HEADER.match(line)) >= 2:
        return _split_files(lines, ranks)
    srun = sum(1 for line in lines[:2000] if _SRUN_PREFIX.match(line)) >= 2
    rest = []
    for line in lines:
        m = _TORCH_PREFIX.match(line) or _MPI_PREFIX.match(line) or (_SRUN_PREFIX.match(line) if srun else None)
        rank = _rank(ranks, int(m.group(1))) if m else None
        if rank is None:
            rest.append(line)
        else:
            rank.lines.append(line[m.end():])
    return rest


def _split_files(lines: list[str], ranks: dict[int, _Rank]) -> list[str]:
    """`tail` of per-rank files: each file's lines are its rank's (any launcher prefix left on
    them is taken off too); lines before the first header are the launcher's."""
    rest: list[str] = []
    current: _Rank | None = None
    numbers = _file_ranks([m.group(1) for line in lines if (m := _FILE_HEADER.match(line)) is not None])
    seen = 0
    for line in lines:
        if _FILE_HEADER.match(line) is not None:
            current = _rank(ranks, numbers[seen])
            seen += 1
            continue
        if current is None:
            rest.append(line)
            continue
        m = _TORCH_PREFIX.match(line) or _MPI_PREFIX.match(line)
        current.lines.append(line[m.end():] if m else line)
    return rest


def _file_ranks(paths: list[str]) -> list[int]:
    """Each file's rank: where every file names a TensorFlow task (chief/, worker1.log, ps-0/out.txt),
    its rank in the job (the chief, the workers, the parameter servers, as a core's TF_CONFIG
    ranks them); else the last number in its name, or its place among the files."""
    tasks = [_TF_TASK_FILE.search(path) for path in paths]
    if all(tasks):
        order = sorted({(TF_TASK_ORDER.index(m.group(1)), int(m.group(2) or 0)) for m in tasks if m})
        return [order.index((TF_TASK_ORDER.index(m.group(1)), int(m.group(2) or 0))) for m in tasks if m]
    ranks = []
    for place, path in enumerate(paths):
        number = _LAST_NUMBER.search(path.rsplit("/", 1)[-1]) or _LAST_NUMBER.search(path)
        ranks.append(int(number.group(1)) if number else place)
    return ranks


def _signal_of_exit(code: int) -> str | None:
    return normalize_name(str(-code)) if code < 0 else None


def _torchrun_summary(lines: list[str], ranks: dict[int, _Rank]) -> int | None:
    """The failure summary's entries; returns the rank torchrun named as root cause."""
    root_section, launcher_root, entry_lines = False, None, []
    current: _Rank | None = None
    for line in lines:
        if _ROOT_CAUSE.match(line):
            root_section = True
            continue
        if _SUMMARY_ENTRY.match(line):
            current, entry_lines = None, [line]
            continue
        m = _SUMMARY_RANK.match(line)
        if m:
            current = _rank(ranks, int(m.group(1)))
            if current is not None:
                current.about.extend([*entry_lines, line])
                if root_section and launcher_root is None:
                    launcher_root = current.rank
            continue
        if current is None:
            continue
        if (e := _SUMMARY_EXIT.match(line)) is not None:
            current.exit_code, current.pid = int(e.group(1)), int(e.group(2))
            current.signal = current.signal or _signal_of_exit(current.exit_code)
        elif (h := _SUMMARY_HOST.match(line)) is not None:
            current.host = h.group(1)
        elif line.strip().startswith(("=", "-")):
            current = None
            continue
        current.about.append(line)
    return launcher_root


def _task_numbers(text: str) -> list[int]:
    numbers: list[int] = []
    for part in text.replace(" ", "").split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            numbers.extend(range(int(low), min(int(high or low), int(low) + MAX_RANKS) + 1))
    return numbers[:MAX_RANKS]


def _launcher_lines(lines: list[str], ranks: dict[int, _Rank]) -> None:
    for line in lines:
        if (m := _MPIRUN.search(line)) is not None:
            rank = _rank(ranks, int(m.group(1)))
            if rank is not None:
                rank.pid, rank.host = int(m.group(2)), m.group(3)
                rank.signal = normalize_name(m.group(4))
                rank.about.append(line)
        elif (m := _SRUN.search(line)) is not None:
            for number in _task_numbers(m.group(2)):
                rank = _rank(ranks, number)
                if rank is not None:
                    rank.host = m.group(1)
                    verdict = m.group(3).replace("(core dumped)", "").strip()
                    rank.signal = from_description(verdict) or rank.signal
                    code = re.search(r"exit code (\d{1,3})", verdict)
                    rank.exit_code = int(code.group(1)) if code else rank.exit_code
                    rank.about.append(line)


def _peer_lines(ranks: dict[int, _Rank], rest: list[str]) -> None:
    """A rank that said its peers failed, in its own lines or in a line naming it ("[Rank 1] ...")."""
    for rank in ranks.values():
        rank.message = rank.message or peer_failure_message(rank.lines[-TAIL_LINES:])
        _note_collective(rank, rank.lines)
    for line in [*rest, *(line for r in ranks.values() for line in r.lines)]:
        m = _NCCL_RANK.search(line)
        if m and peer_failure_message([line]):
            rank = _rank(ranks, int(m.group(1)))
            if rank is not None:
                rank.message = rank.message or line.strip()[:300]
                _note_collective(rank, [line])


def _note_collective(rank: _Rank, lines: list[str]) -> None:
    for line in lines:
        if (op := _OP_TYPE.search(line)) is not None and rank.collective is None and peer_failure_message([line]):
            rank.collective = f"NCCL {op.group(1)}"


def _tensorflow_lines(ranks: dict[int, _Rank], text: str) -> None:
    """TensorFlow's runtime in each rank's lines: the task it says failed (its peer, and a rank
    of the job even where that rank's own lines are not pasted), the collective op aborted, and
    the program's line of the step that raised."""
    rules = job_rules()
    with_chief = mentions_chief(text)
    owners = {task: rank.rank for rank in ranks.values() if (task := own_task(rank.lines)) is not None}
    for rank in list(ranks.values()):
        failed = [f for f in failed_tasks(rank.lines, rules, with_chief, owners) if f.rank != rank.rank]
        if not failed:
            continue
        first = failed[0]
        rank.peer = first.rank
        rank.message = rank.message or first.line
        rank.collective = rank.collective or aborted_collective(rank.lines, rules) or logged_wait(rank.lines, rules)
        rank.step = step_line(rank.lines)
        named = _rank(ranks, first.rank)
        if named is not None and named.failed is None:
            named.failed = FailedTask(rank.rank, first.says, first.line)  # rank: who said it


def _verdict_of(rank: _Rank, rules, triage) -> RankVerdict:
    verdict = RankVerdict(rank=rank.rank, state="unknown", signal=rank.signal, pid=rank.pid, host=rank.host)
    if rank.message is not None:
        verdict.state = "waiting"
        verdict.waited = JobWait(collective=rank.collective, message=rank.message, peer=rank.peer, serving=job_rules().serves(rank.collective))
        if rank.step is not None:
            verdict.waited.file, verdict.waited.line, verdict.waited.python_function = rank.step.file, rank.step.line, rank.step.function
        return verdict
    own = _own_crash(rank, rules, triage)
    if own is not None:
        cls = own.classification
        verdict.state, verdict.fault_kind, verdict.summary, verdict.signature = "crashed", str(cls.fault_kind), cls.summary, cls.signature
        verdict.signal = (own.core.signal.name if own.core is not None else None) or verdict.signal
    elif rank.failed is not None and rank.signal not in ENDING_SIGNALS:
        # Its own lines say nothing of it (or are not pasted): its peers' TensorFlow says it failed.
        verdict.state = "crashed"
        said = f"it {rank.failed.says}, as rank {rank.failed.rank}'s TensorFlow said"
        verdict.summary = f"{rank.signal}: {said}" if rank.signal else said
    elif rank.signal in FAULT_SIGNALS:
        verdict.state = "crashed"
    elif rank.signal in ENDING_SIGNALS:
        verdict.state = "killed"
    elif rank.exit_code is not None and rank.exit_code > 0:
        verdict.state = "exited"
    return verdict


def _own_crash(rank: _Rank, rules, triage) -> Report | None:
    """The rank's own lines triaged alone, when they state a crash."""
    if not rank.lines:
        return None
    try:
        report = triage("\n".join(rank.lines), f"rank {rank.rank}", rules)
    except BadInput:
        return None
    return report if report.classification.fault_kind != "hang" else None


def job_of_text(text: str, rules, triage) -> JobText | None:
    """The job's verdict over the ranks the text speaks of, or None when it names fewer than two.

    `triage(text, name, rules)` triages one rank's lines (the caller's own entry point)."""
    lines = text[: limits.MAX_TEXT_CHARS].splitlines()
    ranks: dict[int, _Rank] = {}
    rest = _split(lines, ranks)
    launcher_root = _torchrun_summary(rest, ranks)
    _launcher_lines(rest, ranks)
    _peer_lines(ranks, rest)
    _tensorflow_lines(ranks, text)
    if len(ranks) < 2:
        return None
    verdicts = [_verdict_of(r, rules, triage) for r in sorted(ranks.values(), key=lambda r: r.rank)]
    verdict = job_verdict(verdicts, None, launcher_root)
    # Of ranks that crashed alike, the one whose own lines say most (a partly pasted block may
    # lack its signal line) is the one classified.
    told = [v.rank for v in verdicts if v.rank in verdict.root_cause and v.signal and v.fault_kind not in (None, "unknown")]
    root = ranks.get((told or verdict.root_cause or [None])[0])
    info = JobInfo(rank=root.rank if root else None, world_size=None, launcher=_launcher(text), verdict=verdict)
    info.state = "crashed" if root else None
    root_text = "\n".join([*root.lines, *root.about]) if root else None
    return JobText(info=info, root_text=root_text)


def with_job(text: str, source_name: str, rules, triage) -> Report:
    """triage(text) of a job's log: the root-cause rank's lines classified, the verdict in report.job.

    `triage(text, source_name, rules, job=False)` is the plain triage of one text."""
    found = job_of_text(text, rules, lambda t, name, r: triage(t, name, r, job=False))
    if found is None:
        return triage(text, source_name, rules, job=False)
    verdict = found.info.verdict
    report = None
    # A root cause known only from its peers' words has no lines to classify: the others' lines
    # are not its crash.
    candidates = (found.root_text,) if found.root_text == "" else (found.root_text, text)
    for candidate in candidates:
        if candidate:
            try:
                report = triage(candidate, source_name, rules, job=False)
                break
            except BadInput:
                continue
    if report is None:  # no crash in the text: ranks that waited (a timeout), nothing else
        report = Report(source="triage")
        report.classification.summary = f"Job: {verdict.summary}"
    if found.root_text is None and not verdict.single:
        # Every rank waited: the signals the text shows are the watchdog's or the launcher's, not
        # the cause. The job hung, as a batch of its cores says.
        report.classification.fault_kind = FaultKind.HANG
    report.job = found.info
    report.classification.evidence.insert(0, f"Job: {verdict.summary}")
    return report


def _launcher(text: str) -> str | None:
    if "torch.distributed" in text or "ChildFailedError" in text or "torchrun" in text:
        return "torchrun"
    if "mpirun" in text or "<stderr>:" in text:
        return "mpi"
    if "srun:" in text:
        return "slurm"
    return None
