"""Real TensorFlow crashes for the tests, one core per scenario, built at most once per session.

Each scenario in tf_corpus/ is a Python program run by the interpreter running the tests (a
virtual environment's `bin/python` as it is, with that environment's TensorFlow) that really
dies by a signal; the kernel writes its core:

- a custom op (tf_corpus/crash_ops.cc, compiled here against `tf.sysconfig` flags and loaded
  with `tf.load_op_library`) faults in its Compute, or overruns its output buffer so that
  glibc aborts when the tensor is freed;
- a raw op that still CHECK-fails on a bad shape (`LRNGrad` with a 1-D output_image), called
  eagerly and as a named node of a tf.function;
- a custom op that overwrites its own kernel object before it faults (no op instance may be
  read from what is left of it);
- raw ops and tf.data / XLA code that still crash 2.21 where the faulting frames are not the
  op's: an exception a kernel threw, caught by pybind11 without the GIL; code XLA compiled at
  run time; a dataset iterator's allocation; a recursion that overflows the main thread's stack;
- subsystems without a natural crash (TFLite Invoke, protobuf serialization while writing a
  checkpoint, TF->NumPy conversion) get a fault injected into the real process: gdb stops it
  at a real function of that subsystem, corrupts one pointer argument and detaches, and the
  process faults by itself in its own frames. The scenario script calls `os.getppid()` right
  before the interesting call; that system call arms the injection, so that earlier calls of
  the same function (imports, warm-up) are left alone.

Cores are ~270-310 MB each: the fixture keeps them in one directory of the session and removes
it when the session ends (see `tf_cores` in conftest.py). Each core's plain analysis
(`coreanalyze CORE --python EXE`, JSON) is run once too (TFCoreCache.report). A session that
will need the corpus has both made by a thread of its own from its start on
(TFCoreCache.prepare_in_background), in the order its tests first need them, while the tests that
need neither run: the machine's second CPU builds the cores.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

from support.coregen import CrashCase, kernel_writes_cores_here, raise_core_limit, run_to_core, wait_for_core_file
from support.paths import OLDER_TENSORFLOW, TF_CORPUS
from support.require import missing, require

OP_SOURCE = TF_CORPUS / "crash_ops.cc"

# The marker the worker-thread scenario puts on the Python line that launches the crash.
CALL_SITE_MARKER = "# <- crash call site"

# The system call a scenario makes right before the call that gets the injected fault.
ARM_SYSCALL = "getppid"

# A lock file every session holds on its own corpus directory while it runs; directories whose
# lock nobody holds belong to sessions that are over.
LOCK_NAME = ".in-use"
CORPUS_DIR_NAME = "tfcores"


@dataclass(frozen=True)
class FaultInjection:
    """Stop at a real function and corrupt a pointer argument; the process then faults itself.

    module:   regex (gdb `sharedlibrary`) of the library holding the functions. gdb reads
              symbols of that library only: reading libtensorflow_cc.so.2's takes ~10 s, and a
              breakpoint gdb plants in its 300 MB of text would make the kernel dump all of it.
    path:     functions the process must enter first, in order (narrows which call is hit).
    function: where the pointer is corrupted, on entry (gdb location; System V argument
              registers: rdi, rsi, rdx, rcx, r8, r9; `this` and hidden return slots count).
    """

    module: str
    function: str
    register: str
    value: int
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str  # file in tf_corpus/
    uses_op_library: bool = False  # the script gets the built crash_ops.so as argv[1]
    injection: FaultInjection | None = None
    args: tuple[str, ...] = ()  # given to the script after the op library


_TFLITE_EVAL_INJECTION = FaultInjection(
    module=r"libpywrap_tflite_common\.so",
    # The fully-connected kernel's Eval(TfLiteContext*, TfLiteNode*): node becomes wild.
    function="'TfLiteStatus tflite::ops::builtin::fully_connected::Eval"
    "<(tflite::ops::builtin::fully_connected::KernelType)1>(TfLiteContext*, TfLiteNode*)'",
    register="rsi",
    value=0xDEAD0000,
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("kernel_compute_segv", "kernel_compute_segv.py", uses_op_library=True),
        Scenario("allocator_heap_corruption", "allocator_heap_corruption.py", uses_op_library=True),
        Scenario("kernel_check_failure", "kernel_check_failure.py"),
        Scenario("fft_zero_length_abort", "fft_zero_length_abort.py"),
        Scenario("interpreter_invoke", "interpreter_invoke.py", injection=_TFLITE_EVAL_INJECTION),
        Scenario(
            "protobuf_serialization",
            "protobuf_serialization.py",
            injection=FaultInjection(
                module=r"libtensorflow_framework\.so",
                path=("tensorflow::BundleWriter::Finish",),
                # SerializeAsString returns a std::string: rdi is the return slot, rsi is `this`.
                function="'google::protobuf::MessageLite::SerializeAsString[abi:cxx11]() const'",
                register="rsi",
                value=0x18,
            ),
        ),
        Scenario(
            "numpy_interop",
            "numpy_interop.py",
            injection=FaultInjection(
                module=r"lib_pywrap_tensorflow_common\.so",
                # Returns a Status (rdi: return slot); rsi points at the unique_ptr<TF_Tensor>.
                function="tensorflow::TF_TensorToMaybeAliasedPyArray",
                register="rsi",
                value=0x10,
            ),
        ),
        Scenario("worker_thread_segv", "worker_thread_segv.py", uses_op_library=True),
        Scenario("graph_check_failure", "graph_check_failure.py"),
        Scenario(
            "interpreter_invoke_xnnpack",
            "interpreter_invoke.py",
            args=("--xnnpack",),
            injection=FaultInjection(
                module=r"libpywrap_tflite_common\.so",
                # The XNNPACK delegate kernel's invoke(TfLiteContext*, TfLiteNode*): node becomes wild.
                function="'tflite::xnnpack::(anonymous namespace)::SubgraphInvoke(TfLiteContext*, TfLiteNode*)'",
                register="rsi",
                value=0xDEAD0000,
            ),
        ),
        Scenario("kernel_overwritten", "kernel_overwritten.py", uses_op_library=True),
        # Crashes whose faulting frames are not the op's (coreanalyze.classify.beyond).
        Scenario("caught_exception_no_gil", "caught_exception_no_gil.py"),
        Scenario("xla_jit_segv", "xla_jit_segv.py"),
        Scenario("dataset_bad_alloc", "dataset_bad_alloc.py"),
        Scenario("dataset_exception_no_gil", "dataset_exception_no_gil.py"),
        Scenario("deep_recursion_overflow", "deep_recursion_overflow.py"),
        # The same node, the model loaded from a file: names and weights only in the mapped file.
        Scenario(
            "interpreter_invoke_model_file",
            "interpreter_invoke.py",
            args=("--model-file",),
            injection=_TFLITE_EVAL_INJECTION,
        ),
    )
}


# ---------------------------------------------------------------------------------------------
# The interpreter with TensorFlow


@dataclass(frozen=True)
class TFPython:
    # The interpreter running the tests, as it was started: a virtual environment's bin/python
    # stays that path (resolving it would name the base binary, which lacks the venv's
    # packages). Its cores name the base binary, as users' cores do.
    exe: Path
    has_tensorflow: bool


_TF_PYTHON: TFPython | None = None


def find_tf_python() -> TFPython:
    """The interpreter running the tests, and whether it can import tensorflow."""
    global _TF_PYTHON
    if _TF_PYTHON is None:
        import importlib.util

        _TF_PYTHON = TFPython(Path(sys.executable), importlib.util.find_spec("tensorflow") is not None)
    return _TF_PYTHON


def require_tensorflow() -> Path:
    """The interpreter that has TensorFlow; in CI its absence fails the test instead of skipping."""

    found = find_tf_python()
    if found.has_tensorflow:
        return found.exe
    missing(f"tensorflow (importable by {found.exe}; run ./setup.sh)")


def quiet_env() -> dict[str, str]:
    # Less log noise on stderr; the FATAL line of a CHECK failure is still written.
    return {"TF_CPP_MIN_LOG_LEVEL": "1", "PYTHONDONTWRITEBYTECODE": "1"}


# ---------------------------------------------------------------------------------------------
# The custom op library


def tf_build_flags(python: Path, base_env: dict | None = None) -> tuple[list[str], list[str]]:
    code = (
        "import json, tensorflow as tf; "
        "print(json.dumps([tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags()]))"
    )
    out = subprocess.run(
        [str(python), "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**(os.environ if base_env is None else base_env), **quiet_env(), "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"cannot read tf.sysconfig flags: {out.stderr[-2000:]}")
    compile_flags, link_flags = json.loads(out.stdout.strip().splitlines()[-1])
    return compile_flags, link_flags


def _program(name: str, base_env: dict | None) -> str:
    """A program on the PATH of base_env (default: this process's), or require()'s verdict."""
    return (shutil.which(name, path=base_env.get("PATH")) if base_env is not None else None) or require(name)


def build_op_library(python: Path, cache_dir: Path, source: Path = OP_SOURCE, base_env: dict | None = None) -> Path:
    """Compile the custom op library as a user would, once per (source, flags)."""
    cxx = _program("g++", base_env)
    compile_flags, link_flags = tf_build_flags(python, base_env)
    key = hashlib.sha256(
        source.read_bytes() + json.dumps([compile_flags, link_flags, cxx]).encode()
    ).hexdigest()[:16]
    out_dir = cache_dir / f"oplib-{key}"
    library = out_dir / f"{source.stem}.so"
    if library.exists():
        return library
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [cxx, "-std=c++17", "-shared", "-fPIC", "-O2", "-g", "-w", str(source), "-o", str(library)]
    cmd += [*compile_flags, *link_flags]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=base_env)
    if done.returncode != 0:
        raise RuntimeError(f"building {source.name} failed:\n{done.stderr[-4000:]}")
    return library


# ---------------------------------------------------------------------------------------------
# Fault injection under gdb

# Runs inside gdb's own Python. PARAMS is filled in by inject_fault().
_DRIVER = r'''
import json
import gdb

PARAMS = json.loads(%(params)r)


def say(message):
    print("[inject] " + message, flush=True)


def inferior_alive():
    return gdb.selected_inferior().pid != 0


def run_to(location):
    bp = gdb.Breakpoint(location)
    # A library that calls its own exported function goes through its PLT: gdb then also
    # plants a location on the stub, which is not the function and where the arguments are
    # only half set up for what follows. Keep the real function only.
    for loc in bp.locations:
        where = gdb.execute("info symbol %%#x" %% loc.address, to_string=True)
        if "@plt" in where or "section .plt" in where:
            loc.enabled = False
    if not any(loc.enabled for loc in bp.locations):
        raise gdb.GdbError("no location for " + location)
    gdb.execute("continue")
    if not inferior_alive() or bp.hit_count == 0:
        raise gdb.GdbError("the process never reached " + location)
    say("stopped in " + str(gdb.selected_frame().name()) + " on thread " + str(gdb.selected_thread().ptid[1]))
    bp.delete()


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set width 0")
# Symbols of the one library the injection needs, nothing else (see FaultInjection.module).
gdb.execute("set auto-solib-add off")
# A process that looks like any other: keep address randomization on.
gdb.execute("set disable-randomization off")
gdb.execute("catch syscall " + PARAMS["arm_syscall"])
gdb.execute("run")
if not inferior_alive():
    raise gdb.GdbError("the process ended before it armed the injection")
pid = gdb.selected_inferior().pid
with open(PARAMS["pid_file"], "w") as f:
    f.write(str(pid))
say("armed in pid " + str(pid))
gdb.execute("delete")
gdb.execute("sharedlibrary " + PARAMS["module"])
for location in PARAMS["path"]:
    run_to(location)
run_to(PARAMS["function"])
gdb.execute("set $%%s = %%d" %% (PARAMS["register"], PARAMS["value"]))
say("corrupted $%%s = %%#x" %% (PARAMS["register"], PARAMS["value"]))
if PARAMS["core"] is None:
    # The kernel writes the core once the process faults on its own.
    gdb.execute("detach")
    say("detached")
else:
    gdb.execute("continue")
    gdb.execute("generate-core-file " + PARAMS["core"])
    say("core written by gdb")
    gdb.execute("kill")
'''


def _find_core(workdir: Path, pid: int) -> Path | None:
    for name in (f"core.{pid}", "core"):
        path = workdir / name
        if path.is_file():
            return path
    return None


def _kill_pid(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


def inject_fault(name: str, argv: list[str], workdir: Path, injection: FaultInjection,
                 env: dict | None = None, timeout: float = 600.0, base_env: dict | None = None) -> CrashCase:
    """Run argv under gdb, corrupt the pointer at injection.function, let the process fault."""
    gdb = _program("gdb", base_env)
    workdir.mkdir(parents=True, exist_ok=True)
    by_kernel = kernel_writes_cores_here()
    pid_file = workdir / "inferior.pid"
    gdb_core = workdir / "core.gdb"
    params = {
        **asdict(injection),
        "path": list(injection.path),
        "arm_syscall": ARM_SYSCALL,
        "pid_file": str(pid_file),
        "core": None if by_kernel else str(gdb_core),
    }
    driver = workdir / "inject_fault.py"
    driver.write_text(_DRIVER % {"params": json.dumps(params)})
    full_env = dict(os.environ if base_env is None else base_env, **(env or {}))
    # gdb's embedded Python must not pick up another interpreter's home.
    full_env.pop("PYTHONHOME", None)
    cmd = [
        gdb, "-nx", "-batch",
        "-iex", "set auto-load off",
        "-iex", "set debuginfod enabled off",
        "-x", str(driver),
        "--args", *argv,
    ]
    # The process inherits gdb's RLIMIT_CORE (and its stdout/stderr pipes: reading them to the
    # end waits for the process to die after gdb detached from it).
    proc = subprocess.Popen(cmd, cwd=workdir, env=full_env, preexec_fn=raise_core_limit,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        if pid_file.exists():
            _kill_pid(int(pid_file.read_text()))
        proc.communicate()
        raise RuntimeError(f"{name}: no crash within {timeout}s under fault injection")
    log = out + err
    (workdir / "inject_fault.log").write_text(log)
    if "[inject] detached" not in log and "[inject] core written by gdb" not in log:
        raise RuntimeError(f"{name}: the fault injection did not happen:\n{log[-4000:]}")
    pid = int(pid_file.read_text())
    if not by_kernel:
        return CrashCase(name, gdb_core, Path(argv[0]), argv, workdir, "gdb", pid,
                         extra={"injection": injection})
    core = _find_core(workdir, pid)
    if core is None:
        raise RuntimeError(f"{name}: the process did not leave a core after the injection:\n{log[-4000:]}")
    wait_for_core_file(core, timeout=60.0)
    target = workdir / f"core.{pid}"
    if core != target:
        core.rename(target)
    return CrashCase(name, target, Path(argv[0]), argv, workdir, "kernel", pid,
                     extra={"injection": injection})


# ---------------------------------------------------------------------------------------------
# The per-session cache


def call_site_line(script: Path) -> int | None:
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        if CALL_SITE_MARKER in line:
            return number
    return None


class TFCoreCache:
    """Builds each TensorFlow crash at most once per session, on first use (`get(name)`), and
    analyzes it once (`report(name)`); a thread may make them ahead (prepare_in_background)."""

    def __init__(self, root: Path, python: Path):
        self.root = root
        self.python = python
        # The environment every core is made and analyzed in: this process's when the cache is
        # made, whatever a test running meanwhile sets or hides (a PATH without gdb, ...).
        self.environ = dict(os.environ)
        self.cwd = Path.cwd()
        self.cases: dict[str, CrashCase] = {}
        self.reports: dict[str, tuple[CrashCase, dict, float]] = {}
        self.build_seconds: dict[str, float] = {}
        self._op_library: Path | None = None
        # One lock per thing made (a core, a report, the op library): whoever asks first makes
        # it, whoever asks meanwhile waits for it.
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._stop = threading.Event()
        self._background: threading.Thread | None = None

    def _lock(self, key: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    def op_library(self) -> Path:
        with self._lock("op_library"):
            if self._op_library is None:
                started = time.monotonic()
                self._op_library = build_op_library(self.python, self.root, base_env=self.environ)
                self.build_seconds["op_library"] = time.monotonic() - started
        return self._op_library

    def report(self, name: str) -> tuple[CrashCase, dict, float]:
        """(case, report, seconds): the plain analysis of the scenario's core, run once."""
        from support.clirun import analyze_json

        with self._lock(f"report:{name}"):
            if name not in self.reports:
                case = self.get(name)
                started = time.perf_counter()
                report = analyze_json(case.core, "--python", str(case.exe), cwd=self.cwd, base_env=self.environ)
                self.reports[name] = (case, report, time.perf_counter() - started)
        return self.reports[name]

    def prepare_in_background(self, names: list[str], analyze: bool = True) -> None:
        """Build (and analyze) these scenarios, in this order, on a thread of their own. A failure
        there is left for the test that asks for the same core to meet (it tries again)."""

        def prepare() -> None:
            for name in names:
                if self._stop.is_set():
                    return
                try:
                    self.report(name) if analyze else self.get(name)
                except BaseException:  # noqa: BLE001 - the asking test makes it again and says why
                    pass

        self._background = threading.Thread(target=prepare, name="tf-cores", daemon=True)
        self._background.start()

    def close(self) -> None:
        """Stop making cores ahead; waits for the one being made."""
        self._stop.set()
        if self._background is not None:
            self._background.join()

    def key(self, scenario: Scenario) -> str:
        h = hashlib.sha256()
        h.update((TF_CORPUS / scenario.script).read_bytes())
        if scenario.uses_op_library:
            h.update(OP_SOURCE.read_bytes())
        h.update(repr((scenario.injection, scenario.args)).encode())
        return h.hexdigest()[:12]

    def get(self, name: str) -> CrashCase:
        with self._lock(f"core:{name}"):
            if name not in self.cases:
                self.cases[name] = self._build(name)
        return self.cases[name]

    def _build(self, name: str) -> CrashCase:
        scenario = SCENARIOS[name]
        script = TF_CORPUS / scenario.script
        argv = [str(self.python), str(script)]
        if scenario.uses_op_library:
            argv.append(str(self.op_library()))
        argv += scenario.args
        workdir = self.root / f"{name}-{self.key(scenario)}"
        started = time.monotonic()
        # TensorFlow leaves autograph's generated files in the temporary directory of a process
        # that dies: this cache's own, removed with it.
        scratch = self.root / "tmp"
        scratch.mkdir(parents=True, exist_ok=True)
        env = {**quiet_env(), "TMPDIR": str(scratch)}
        if scenario.injection is None:
            case = run_to_core(name, argv, workdir, env=env, timeout=600, base_env=self.environ)
        else:
            case = inject_fault(name, argv, workdir, scenario.injection, env=env, base_env=self.environ)
        self.build_seconds[name] = time.monotonic() - started
        case.exe = self.python
        case.extra["script"] = script
        case.extra["build_seconds"] = self.build_seconds[name]
        if scenario.uses_op_library:
            case.extra["op_library"] = self.op_library()
        line = call_site_line(script)
        if line is not None:
            case.extra["call_site_line"] = line
        return case


@contextmanager
def tf_core_cache(python: Path, base: Path) -> Iterator[TFCoreCache]:
    """A TFCoreCache of `python`'s cores in a fresh corpus directory under `base`, locked while
    it is in use and removed after."""
    require("gdb")
    require("g++")
    root, lock = _claim_corpus_dir(base)
    cache = TFCoreCache(root, python)
    try:
        yield cache
    finally:
        cache.close()
        shutil.rmtree(root, ignore_errors=True)
        os.close(lock)


def _claim_corpus_dir(base: Path) -> tuple[Path, int]:
    """A fresh corpus directory for this session, locked while the session runs.

    Removes corpus directories of earlier sessions (under pytest's other numbered basetemps)
    whose lock nobody holds any more, so cores never pile up across sessions.
    """
    for old in base.parent.glob(f"pytest-*/{CORPUS_DIR_NAME}"):
        if old.is_dir() and not old.is_relative_to(base) and not _locked(old):
            shutil.rmtree(old, ignore_errors=True)
    root = base / CORPUS_DIR_NAME
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return root, fd


def _locked(directory: Path) -> bool:
    lock = directory / LOCK_NAME
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        # No lock yet: a session that has just made the directory is about to take it.
        try:
            return time.time() - directory.stat().st_mtime < 60
        except OSError:
            return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def installed_version(python: Path, distribution: str) -> str:
    """The version of a distribution installed for that interpreter."""
    code = f"import importlib.metadata as m; print(m.version({distribution!r}))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


# ---------------------------------------------------------------------------------------------
# An older TensorFlow (tests/older_tensorflow.txt), for the op-instance tests of its layouts


def older_requirement() -> str:
    return OLDER_TENSORFLOW.read_text().strip()


def make_older_python(where: Path) -> Path:
    """A virtual environment with the older TensorFlow, made from the interpreter behind the test
    one (a venv is made from a base interpreter) and installed from pip's cache."""
    require_tensorflow()
    venv = where / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    made = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=600)
    if made.returncode != 0:
        missing(f"cannot make a virtual environment with {base}: {made.stderr[-2000:]}")
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(OLDER_TENSORFLOW)],
        capture_output=True, text=True, timeout=3600,
    )
    if installed.returncode != 0:
        missing(f"cannot install {older_requirement()} (run ./setup.sh to fill pip's cache): {installed.stderr[-2000:]}")
    return python
