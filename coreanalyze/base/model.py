"""The one data model that flows through every stage: notes -> gdb -> symbols -> classify -> render.

Addresses are ints here; the JSON form writes them as "0x..." strings so that consumers in
languages without 64-bit integers (JavaScript) do not lose precision.

Fields named in the JSON contract (schema "coreanalyze/1") are never renamed; new fields are
added with defaults so that every stage can fill only what it knows.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

from coreanalyze.base.vocabulary import Confidence, FaultKind, FrameKind, ModuleStatus, module_status

SCHEMA = "coreanalyze/1"

# classification.category is rules data: the [[category]] tables of classify/rules.toml (a
# user's --rules may add one).

# classification.fault_kind and modules[].status vocabularies (coreanalyze.base.vocabulary).
FAULT_KINDS = tuple(FaultKind)
MODULE_STATUSES = tuple(ModuleStatus)


@dataclass
class SignalInfo:
    number: int | None = None
    name: str | None = None  # "SIGSEGV"
    code: int | None = None  # si_code
    code_name: str | None = None  # "SEGV_MAPERR", "SI_TKILL", ...
    address: int | None = None  # si_addr for SIGSEGV/SIGBUS/SIGILL/SIGFPE
    sender_pid: int | None = None  # for signals sent by kill/tgkill/sigqueue
    sender_uid: int | None = None
    errno: int | None = None
    # A handler (faulthandler, absl's failure signal handler, a crash reporter) caught the signal
    # and raised it again: this names that handler, and the fields above are the original
    # signal, read from the signal frame on the stack.
    reraised_by: str | None = None


@dataclass
class Frame:
    index: int
    kind: FrameKind = FrameKind.NATIVE
    pc: int | None = None
    function: str | None = None  # demangled, as shown to people
    module: str | None = None  # path of the mapped object (native) or None (python)
    file: str | None = None
    line: int | None = None
    # Extra detail, all optional.
    raw_function: str | None = None  # mangled / as the symbol table spells it
    offset: int | None = None  # pc - symbol start, when known
    source: str | None = None  # the source line text, when the file is readable here
    inlined: bool = False
    reliable: bool = True  # False when the module is missing or its build-id differs
    locals: dict[str, str] | None = None  # python frames with --locals: name -> safe repr
    # An unnamed native frame of a library that names only what it exports (libcuda, libcudnn,
    # ROCm's libraries): the exported function the call entered the library through, the
    # nearest named frame further out in the same library ("cuCtxSynchronize_v2").
    entry_point: str | None = None


@dataclass
class Thread:
    tid: int
    name: str | None = None
    crashed: bool = False
    frames: list[Frame] = field(default_factory=list)
    registers: dict[str, int] = field(default_factory=dict)
    role: str | None = None  # "main", "tf-inter-op", "tf-intra-op", "tf-data", ...
    holds_gil: bool | None = None


@dataclass
class Module:
    path: str
    start: int | None = None
    end: int | None = None
    build_id: str | None = None  # as read from the core's memory
    local_path: str | None = None  # the file used on this machine
    local_build_id: str | None = None
    status: ModuleStatus = ModuleStatus.MISSING
    # DT_NEEDED of the local file when it is the crashed build (ok / no-build-id): tells a
    # custom-op library (it links libtensorflow_framework) from any other extension.
    needed: list[str] | None = None
    # Where local_path came from, in words: "local", "sysroot", "image NAME (ID), layer 2/3",
    # or the file name of the wheel --fetch took it from (coreanalyze.symbols.provenance).
    source: str | None = None
    # The same as data: {kind: local|sysroot|image|wheel, ...}; for an image its name, ID, the
    # file's path in the image, its layer (1-based) and the layer's digest.
    origin: dict | None = None
    not_found: str | None = None  # for a module without a file here: where it was looked for
    debug_file: str | None = None  # the separate debug file used for its names and lines
    debug_source: str | None = None  # where that came from: debug-dir|sysroot|image|system|beside|debuginfod

    def __post_init__(self) -> None:
        # A status read back from JSON is a plain string; one that is no status means no
        # trusted local file.
        self.status = module_status(self.status) or ModuleStatus.MISSING


@dataclass
class CoreInfo:
    path: str
    pid: int | None = None
    executable: str | None = None
    cmdline: str | None = None
    signal: SignalInfo = field(default_factory=SignalInfo)
    uid: int | None = None
    gid: int | None = None
    ppid: int | None = None
    arch: str | None = None  # "x86_64", "aarch64", ...
    size: int | None = None  # bytes on disk
    executable_used: str | None = None  # the binary gdb was given
    shrunk: ShrunkCore | None = None  # the core is a `coreanalyze shrink` copy of a bigger one


@dataclass
class ShrunkCore:
    """What `coreanalyze shrink` wrote into the core it made (coreanalyze.corefile.shrunk)."""

    original_size: int | None = None  # bytes of the core it was shrunk from
    redacted: list[str] = field(default_factory=list)  # what --redact dropped, in words


@dataclass
class Culprit:
    function: str | None = None
    module: str | None = None
    frame_index: int | None = None


@dataclass
class OpInput:
    dtype: str | None = None  # "float32", ...; None when the input is absent
    shape: list[int] | None = None
    value: list[Any] | None = None  # the elements, when there are only a handful
    # TFLite tensors also carry these:
    name: str | None = None
    index: int | None = None  # tensor index in the subgraph
    scale: float | None = None  # quantization
    zero_point: int | None = None
    allocation: str | None = None  # "arena-rw", "mmap-ro", ...
    bytes: int | None = None  # the buffer's size as the tensor says
    needed_bytes: int | None = None  # what its dtype and shape need


@dataclass
class OpInstance:
    """The node whose kernel was running, read from the crashed process's memory."""

    framework: str  # "tensorflow" | "tflite"
    node: str | None = None
    op: str | None = None  # op type (TF) or builtin op / custom name (TFLite)
    device: str | None = None
    inputs: list[OpInput] = field(default_factory=list)
    kernel: str | None = None  # the kernel class whose object was read
    layout: str | None = None  # the layout data the objects were read with
    delegate: str | None = None
    node_index: int | None = None
    reproducer: str | None = None
    version: int | None = None  # TFLite op version
    outputs: list[OpInput] = field(default_factory=list)  # TFLite: the node's output tensors
    missing: list[str] = field(default_factory=list)  # fields that could not be read, each with why
    # Mapped files some fields were read from (the core leaves out unmodified file pages):
    # path -> how the file's identity was checked ("size", "size and N pages of content").
    read_from_files: dict[str, str] = field(default_factory=dict)


@dataclass
class ThreadWait:
    """Where one thread of a hung process is: running, or waiting on what (and who holds it)."""

    tid: int
    state: str  # one of WAIT_STATES
    object: int | None = None  # address of the mutex / futex word / fd number for io
    object_kind: str | None = None  # "mutex", "futex", "condition variable", "GIL", "fd", ...
    object_name: str | None = None  # the global variable at object, when a symbol table names it
    owner: int | None = None  # tid that holds the object (glibc mutex owner, GIL holder)
    syscall: str | None = None  # the system call it sleeps in
    frame_index: int | None = None  # the first frame of the thread's own code above the primitives
    function: str | None = None
    file: str | None = None
    line: int | None = None
    holds_gil: bool | None = None


@dataclass
class DeadlockStep:
    """One thread of a deadlock cycle: it holds `holds` and waits for `wants` (held by the next)."""

    tid: int
    holds: str
    wants: str
    waits_for: int  # the tid holding `wants`
    function: str | None = None  # the frame where it waits (and took what it holds, or its caller did)
    frame_index: int | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class HangInfo:
    """classification.hang: a snapshot's threads, who holds the GIL, and a deadlock cycle if any."""

    reason: str = ""  # why this core is a snapshot and not a crash
    thread: int | None = None  # the thread the verdict is about (also crashing_thread)
    threads: list[ThreadWait] = field(default_factory=list)
    gil_holder: int | None = None
    gil_waiters: list[int] = field(default_factory=list)
    deadlock: list[DeadlockStep] = field(default_factory=list)
    rule: str | None = None  # the TensorFlow hang rule that matched (hang_rules.toml)


# classification.hang.threads[].state vocabulary ("gpu": waiting for the GPU in a synchronize,
# stream/event wait or collective call).
WAIT_STATES = (
    "running", "mutex", "condition", "futex", "gil", "join", "io", "sleep", "signal", "gpu", "other-syscall",
    "unknown",
)


@dataclass
class GpuFault:
    """classification.gpu: what the GPU did, from the GPU core dump or the host thread's call."""

    exception: str | None = None  # "Warp Illegal Address", "Device-side assert", ...
    kernel: str | None = None  # the faulting kernel's name (demangled)
    device: int | None = None
    sm: int | None = None
    warp: int | None = None
    lane: int | None = None
    pc: int | None = None  # the first faulting lane's PC (virtual, in the kernel's module)
    grid: int | None = None  # grid id
    block: list[int] | None = None  # (x, y, z)
    thread: list[int] | None = None  # (x, y, z)
    api: str | None = None  # the host call that waited on or launched the work ("cuCtxSynchronize_v2")
    gpu_core: str | None = None  # the GPU core dump that was read, or where it should be
    device_name: str | None = None  # "NVIDIA H100 80GB HBM3"
    sm_arch: str | None = None  # "sm_90"
    address: int | None = None  # the faulting memory address, where the GPU core says
    kernel_offset: int | None = None  # pc - kernel's start
    function: str | None = None  # the device function holding the PC, when the kernel called one
    function_offset: int | None = None  # pc - that function's start
    gpu_core_status: str | None = None  # "read" | "not-found" | "unreadable" (gpu_core is then where it should be)


@dataclass
class OomInfo:
    """classification.oom: the allocation that failed."""

    allocator: str | None = None  # "BFC (GPU_0_bfc)", "cudaMalloc", "std::bad_alloc", "cgroup", ...
    requested: int | None = None  # bytes asked for
    in_use: int | None = None  # bytes in use when it failed, where the core or log says
    limit: int | None = None  # the allocator's or cgroup's limit


@dataclass
class Classification:
    category: str = "unknown"
    fault_kind: FaultKind = FaultKind.UNKNOWN
    culprit: Culprit = field(default_factory=Culprit)
    signature: str = ""
    summary: str = ""
    evidence: list[str] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    abort_message: str | None = None
    confidence: Confidence = Confidence.LOW
    # Where the bad code most likely is, when it differs from the culprit
    # (e.g. a custom-op library below a TensorFlow frame).
    suspect: Culprit | None = None
    op: str | None = None  # kernel class, TFLite builtin op, or custom-op library
    # The crash's own verdict, finer than fault_kind: a sanitizer's class ("heap-buffer-overflow
    # READ of size 4"), an uncaught exception's type.
    detail: str | None = None
    op_instance: OpInstance | None = None  # the node being run, when memory could tell
    op_instance_unread: str | None = None  # why a running kernel's op instance could not be read
    hang: HangInfo | None = None  # fault_kind "hang": wait states, GIL, deadlock cycle
    gpu: GpuFault | None = None  # what the GPU did (fault_kind gpu-exception, or a GPU wait)
    oom: OomInfo | None = None  # fault_kind out-of-memory
    # The known crash it is (coreanalyze/known: id, title, url, fixed_in, note, advice), else None
    known: dict[str, Any] | None = None


@dataclass
class JobWait:
    """What a rank that waited for its peers was blocked in."""

    collective: str | None = None  # "all_reduce", "recv", "barrier", "CollectiveReduceV2", ...
    function: str | None = None  # the native function its thread waited in ("c10d::Work::wait")
    file: str | None = None  # the Python line that called it (the program's own, not a library's)
    line: int | None = None
    python_function: str | None = None
    peer: int | None = None  # the rank it waited for, where the text says or the job has two ranks
    message: str | None = None  # what the rank said of its peers (a timeout, a closed connection)
    serving: bool = False  # it served the others' requests (a parameter server, a PSS worker): no peer of its own to wait for


@dataclass
class RankVerdict:
    """One rank of a job as the job's verdict sees it."""

    rank: int | None
    state: str  # one of RANK_STATES
    fault_kind: str | None = None
    signal: str | None = None
    summary: str | None = None
    signature: str | None = None
    pid: int | None = None
    host: str | None = None
    waited: JobWait | None = None
    sent_by: str | None = None  # who sent the signal that ended it: "rank 1", "its parent (pid 42)", "pid 7"
    died: int | None = None  # its place in the order of deaths (1: first), where the times say
    core: str | None = None  # batch: the core's path; triage: None
    evidence: list[str] = field(default_factory=list)


@dataclass
class JobVerdict:
    """The job's root cause over its ranks: the rank(s) that crashed on their own for one reason,
    every other rank with what it waited in; or, when no rank did, why there is no single one."""

    root_cause: list[int] = field(default_factory=list)  # ranks; several when they failed for the same reason
    summary: str = ""
    single: bool = True  # False: the evidence names no single rank (all waiting: deadlock or lost host)
    ranks: list[RankVerdict] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # ranks of the world that left nothing to read
    launcher_root_cause: int | None = None  # the rank the launcher named (torchrun: by exit time alone)


@dataclass
class CaptureInfo:
    """report.capture: the crash was caught as it happened (`coreanalyze run`, the guard, the
    pytest plugin, the notebook extension), the core written by the watcher (docs/capture.md)."""

    by: str  # "run", "guard", "pytest", "notebook"
    command: list[str] = field(default_factory=list)  # the process's arguments
    pid: int | None = None
    core: str | None = None  # the core the watcher wrote (None: it could not)
    died: str | None = None  # what ended it: "SIGSEGV", "exit status 1"; None while held
    handler_ran: bool = False  # the program's own signal handler got the fault first
    test: str | None = None  # the pytest node id it was running
    problem: str | None = None  # why the core is incomplete or missing
    oom_kills: int | None = None  # OOM kills of its memory cgroup while it ran
    peak_memory: int | None = None  # bytes: the process's peak RSS, else its cgroup's peak
    memory_limit: int | None = None  # the memory cgroup's limit, bytes


@dataclass
class JobInfo:
    """report.job: the job and rank this process was, from its environment (or a pasted job log)."""

    id: str | None = None  # "torchrun:RUN_ID", "tf:<cluster digest>", "slurm:JOB.STEP", "mpi:NAMESPACE", ...
    rank: int | None = None
    world_size: int | None = None
    role: str | None = None  # TF_CONFIG's task type ("worker", "chief", "ps"), torchrun's ROLE_NAME
    local_rank: int | None = None
    launcher: str | None = None  # torchrun, tensorflow, jax, mpi, horovod, slurm, torch
    master: str | None = None  # the address the ranks met at
    address: str | None = None  # this task's own address (TF_CONFIG)
    host: str | None = None
    variables: list[str] = field(default_factory=list)  # the environment variables (or JAX's flags) it was read from
    state: str | None = None  # this rank: one of RANK_STATES
    waited: JobWait | None = None  # state "waiting": what it was blocked in
    sent_by: str | None = None
    verdict: JobVerdict | None = None  # triage of a job's log: the root cause over its ranks


# job.state / job.verdict.ranks[].state: crashed on its own; blocked waiting for its peers (in a
# collective, or aborted by a peer's failure); stuck in something that is no collective (what the
# others may wait for); ended by someone while running; ended without a crash of its own (an exit
# code); or not told.
RANK_STATES = ("crashed", "waiting", "stuck", "killed", "exited", "unknown")


@dataclass
class LaunchedFrom:
    tid: int
    file: str | None = None
    line: int | None = None
    function: str | None = None


@dataclass
class Report:
    core: CoreInfo | None = None
    crashing_thread: int | None = None
    threads: list[Thread] = field(default_factory=list)
    classification: Classification = field(default_factory=Classification)
    launched_from: LaunchedFrom | None = None
    modules: list[Module] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    fault_instruction: str | None = None  # disassembly at the faulting pc
    auxv: dict[str, Any] = field(default_factory=dict)
    source: str = "core"  # "core" | "triage"
    schema: str = SCHEMA
    tool_version: str = ""
    job: JobInfo | None = None  # the job and rank of a multi-process training run (coreanalyze.jobs)
    capture: CaptureInfo | None = None  # how a crash that left no core of its own was caught (coreanalyze.capture)

    def thread(self, tid: int | None) -> Thread | None:
        for t in self.threads:
            if t.tid == tid:
                return t
        return None

    @property
    def crashed_thread(self) -> Thread | None:
        found = self.thread(self.crashing_thread)
        if found is not None:
            return found
        return next((t for t in self.threads if t.crashed), None)

    def to_dict(self) -> dict[str, Any]:
        data = to_jsonable(self)
        if data.get("job") is None:
            del data["job"]  # only a job's processes have one: the others' JSON stays as it was
        if data.get("capture") is None:
            del data["capture"]  # only a caught crash has one
        return data


# Keys whose int values are addresses and are written as hex strings.
_ADDRESS_KEYS = frozenset({"pc", "address", "start", "end", "object"})


def _hex(value: int) -> str:
    return f"0x{value:x}"


@functools.cache
def _field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass in the order they are written (None: not a dataclass)."""
    if not dataclasses.is_dataclass(cls):
        return None
    names = tuple(f.name for f in dataclasses.fields(cls))
    if cls is Report:  # the contract puts schema and tool_version first
        first = ("schema", "tool_version")
        names = first + tuple(n for n in names if n not in first)
    return names


def to_jsonable(obj: Any, key: str | None = None) -> Any:
    """Plain JSON-ready structure; addresses become "0x.." strings, registers too."""
    kind = type(obj)
    # The plain types first, by exact type (a report has some 15,000 values); anything else,
    # enums included, takes the general path below.
    if kind is str or obj is None or kind is float or kind is bool:
        return obj
    if kind is int:
        return _hex(obj) if key in _ADDRESS_KEYS else obj
    if kind is list or kind is tuple:
        return [to_jsonable(v) for v in obj]
    names = _field_names(kind)
    if names is not None:
        return {name: to_jsonable(getattr(obj, name), name) for name in names}
    if isinstance(obj, dict):
        if key == "registers":
            return {k: _hex(v) if isinstance(v, int) else v for k, v in obj.items()}
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int) and key in _ADDRESS_KEYS:
        return _hex(obj)
    return obj


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return int(str(value), 0)


def frame_from_dict(d: dict[str, Any]) -> Frame:
    known = {f.name for f in dataclasses.fields(Frame)}
    kwargs = {k: v for k, v in d.items() if k in known}
    kwargs["pc"] = _int(kwargs.get("pc"))
    return Frame(**kwargs)


def op_instance_from_dict(d: dict[str, Any]) -> OpInstance:
    known = {f.name for f in dataclasses.fields(OpInstance)}
    instance = OpInstance(**{k: v for k, v in d.items() if k in known and k not in ("inputs", "outputs")})
    tensor_fields = {f.name for f in dataclasses.fields(OpInput)}
    instance.inputs = [OpInput(**{k: v for k, v in i.items() if k in tensor_fields}) for i in d.get("inputs") or []]
    instance.outputs = [OpInput(**{k: v for k, v in o.items() if k in tensor_fields}) for o in d.get("outputs") or []]
    return instance


def hang_from_dict(d: dict[str, Any]) -> HangInfo:
    threads = [ThreadWait(**{**t, "object": _int(t.get("object"))}) for t in d.get("threads", [])]
    steps = [DeadlockStep(**s) for s in d.get("deadlock", [])]
    rest = {k: v for k, v in d.items() if k not in ("threads", "deadlock")}
    return HangInfo(threads=threads, deadlock=steps, **rest)


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def wait_from_dict(d: Any) -> JobWait | None:
    return JobWait(**_known(JobWait, d)) if isinstance(d, dict) else None


def job_from_dict(d: dict[str, Any]) -> JobInfo:
    job = JobInfo(**{k: v for k, v in _known(JobInfo, d).items() if k not in ("waited", "verdict")})
    job.waited = wait_from_dict(d.get("waited"))
    verdict = d.get("verdict")
    if isinstance(verdict, dict):
        job.verdict = JobVerdict(**{k: v for k, v in _known(JobVerdict, verdict).items() if k != "ranks"})
        for r in verdict.get("ranks") or []:
            rank = RankVerdict(**{k: v for k, v in _known(RankVerdict, r).items() if k != "waited"})
            rank.waited = wait_from_dict(r.get("waited"))
            job.verdict.ranks.append(rank)
    return job


def report_from_dict(d: dict[str, Any]) -> Report:
    """Inverse of to_dict, for reports read back from JSON (batch summaries, merge)."""
    sig = dict((d.get("core") or {}).get("signal") or {})
    if "address" in sig:
        sig["address"] = _int(sig["address"])
    core = None
    if d.get("core"):
        core_fields = {f.name for f in dataclasses.fields(CoreInfo)}
        core = CoreInfo(**{k: v for k, v in d["core"].items() if k in core_fields and k != "signal"})
        core.signal = SignalInfo(**sig)
        if isinstance(core.shrunk, dict):
            core.shrunk = ShrunkCore(**{k: v for k, v in core.shrunk.items() if k in ("original_size", "redacted")})
    threads = []
    for t in d.get("threads", []):
        threads.append(
            Thread(
                tid=t["tid"],
                name=t.get("name"),
                crashed=t.get("crashed", False),
                frames=[frame_from_dict(f) for f in t.get("frames", [])],
                registers={k: _int(v) for k, v in (t.get("registers") or {}).items()},
                role=t.get("role"),
                holds_gil=t.get("holds_gil"),
            )
        )
    c = d.get("classification") or {}
    cls = Classification(
        **{k: v for k, v in c.items() if k not in ("culprit", "suspect", "op_instance", "hang", "gpu", "oom")}
    )
    if c.get("gpu"):
        gpu = dict(c["gpu"])
        for name in ("pc", "address"):
            gpu[name] = _int(gpu.get(name))
        cls.gpu = GpuFault(**{k: v for k, v in gpu.items() if k in {f.name for f in dataclasses.fields(GpuFault)}})
    if c.get("oom"):
        cls.oom = OomInfo(**{k: v for k, v in c["oom"].items() if k in {f.name for f in dataclasses.fields(OomInfo)}})
    if c.get("op_instance"):
        cls.op_instance = op_instance_from_dict(c["op_instance"])
    if c.get("hang"):
        cls.hang = hang_from_dict(c["hang"])
    cls.culprit = Culprit(**(c.get("culprit") or {}))
    if c.get("suspect"):
        cls.suspect = Culprit(**c["suspect"])
    modules = []
    for m in d.get("modules", []):
        m = dict(m)
        m["start"], m["end"] = _int(m.get("start")), _int(m.get("end"))
        modules.append(Module(**m))
    lf = d.get("launched_from")
    return Report(
        core=core,
        crashing_thread=d.get("crashing_thread"),
        threads=threads,
        classification=cls,
        launched_from=LaunchedFrom(**lf) if lf else None,
        modules=modules,
        environment=d.get("environment") or {},
        warnings=list(d.get("warnings") or []),
        fault_instruction=d.get("fault_instruction"),
        auxv=d.get("auxv") or {},
        job=job_from_dict(d["job"]) if isinstance(d.get("job"), dict) else None,
        source=d.get("source", "core"),
        schema=d.get("schema", SCHEMA),
        tool_version=d.get("tool_version", ""),
    )
