"""The TensorFlow crash corpus: real TF 2.x CPU processes that really crashed, and their verdicts.

TestCorpusCores proves each core is what it claims to be, with plain gdb: the signal the
kernel recorded, the real function on the crashing thread's stack, the process that dumped
it. TestVerdicts runs the command line on each core and checks the classification.
"""

from __future__ import annotations

import functools
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support.clirun import crashed_thread
from support.pythons import interpreter_code_file, is_interpreter_code
from support.require import require
from support.tfcores import SCENARIOS, installed_version

from coreanalyze.corefile import read_core
from coreanalyze.corefile.tables import PSARGS_LEN

pytestmark = pytest.mark.tf

SEGV_MAPERR = 1
SI_TKILL = -6  # raise()/abort() inside the process itself
NULL_PAGE_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Expected:
    signo: int
    si_code: int
    # Regexes over the crashing thread's frames. gdb runs with `demangle-style none` (4 s
    # instead of 12 s on libtensorflow_cc), so they name identifiers that read the same in
    # mangled and demangled spellings; the custom op library has DWARF and shows plain names.
    stack: tuple[str, ...]
    innermost: str | None = None  # frame #0, for faults (aborts start in pthread_kill)
    address: tuple[int, int] | None = None  # [low, high) bounds of si_addr


EXPECTED: dict[str, Expected] = {
    "kernel_compute_segv": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"ScatterToSlotsOp.*Compute", r"ThreadPoolDevice.*Compute", r"EagerExecute"),
        innermost=r"ScatterToSlotsOp.*Compute .*crash_ops\.cc",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "allocator_heap_corruption": Expected(
        signal.SIGABRT, SI_TKILL,
        stack=(r"\babort\b", r"malloc_printerr", r"_int_free", r"Tensor(D[012]Ev|::~Tensor)", r"TensorHandle"),
    ),
    "kernel_check_failure": Expected(
        signal.SIGABRT, SI_TKILL,
        stack=(r"\babort\b", r"LogMessage", r"dim_size", r"LRNGradOp.*Compute"),
    ),
    "fft_zero_length_abort": Expected(
        signal.SIGABRT, SI_TKILL,
        stack=(r"\babort\b", r"ducc0", r"FFTCPU", r"FFTBase.*Compute"),
    ),
    "interpreter_invoke": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"fully_connected.*Eval", r"Subgraph.*InvokeImpl", r"InterpreterWrapper.*Invoke"),
        innermost=r"fully_connected.*Eval.*libpywrap_tflite_common\.so",
        address=(0xDEAD0000, 0xDEAD1000),
    ),
    "protobuf_serialization": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"protobuf.*MessageLite", r"SerializeAsString", r"BundleWriter.*Finish", r"SaveV2.*Compute"),
        innermost=r"protobuf.*MessageLite.*libtensorflow_framework\.so",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "numpy_interop": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"TF_TensorToMaybeAliasedPyArray", r"TFE_TensorHandleToNumpy", r"EagerTensor_numpy"),
        innermost=r"TF_TensorToMaybeAliasedPyArray.*lib_pywrap_tensorflow_common\.so",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "worker_thread_segv": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"ScatterToSlotsOp.*Compute", r"ExecutorState.*Process", r"ThreadPoolTempl.*WorkerLoop"),
        innermost=r"ScatterToSlotsOp.*Compute",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "interpreter_invoke_model_file": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"fully_connected.*Eval", r"Subgraph.*InvokeImpl", r"InterpreterWrapper.*Invoke"),
        innermost=r"fully_connected.*Eval.*libpywrap_tflite_common\.so",
        address=(0xDEAD0000, 0xDEAD1000),
    ),
    "interpreter_invoke_xnnpack": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"xnnpack.*SubgraphInvoke", r"Subgraph.*InvokeImpl", r"InterpreterWrapper.*Invoke"),
        innermost=r"xnnpack.*SubgraphInvoke.*libpywrap_tflite_common\.so",
        address=(0xDEAD0000, 0xDEAD1000),
    ),
    "graph_check_failure": Expected(
        signal.SIGABRT, SI_TKILL,
        stack=(r"\babort\b", r"LogMessage", r"dim_size", r"LRNGradOp.*Compute"),
    ),
    "kernel_overwritten": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"OverwriteOwnKernelOp.*Compute", r"ThreadPoolDevice.*Compute"),
        innermost=r"OverwriteOwnKernelOp.*Compute .*crash_ops\.cc",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "caught_exception_no_gil": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"PyErr_Occurred", r"translate_exception", r"try_translate_exceptions", r"dispatcher"),
        innermost=r"PyErr_Occurred",
        address=(0, NULL_PAGE_LIMIT),
    ),
    # gdb reads XLA's objects through its JIT interface and names the compiled kernel.
    "xla_jit_segv": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"SmallKernelThunk.*Execute", r"XlaLocalLaunchBase.*ComputeAsync"),
        innermost=r"custom-call",
    ),
    "dataset_bad_alloc": Expected(
        signal.SIGABRT, SI_TKILL,
        stack=(r"\babort\b", r"__cxa_throw", r"InputBuffer", r"FixedLengthRecordDatasetOp.*UncompressedIterator.*GetNextInternal"),
    ),
    "dataset_exception_no_gil": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"PyErr_Occurred", r"try_translate_exceptions", r"dispatcher"),
        innermost=r"PyErr_Occurred",
        address=(0, NULL_PAGE_LIMIT),
    ),
    "deep_recursion_overflow": Expected(
        signal.SIGSEGV, SEGV_MAPERR,
        stack=(r"VariantTensorData.*ToProto", r"ToProtoField"),
    ),
}


def test_every_scenario_has_expectations():
    assert set(EXPECTED) == set(SCENARIOS)


# ---------------------------------------------------------------------------------------------
# What plain gdb sees in each core


@dataclass
class GdbView:
    generated_by: str
    signo: int
    si_code: int
    address: int | None
    crashing_lwp: int
    crashing_stack: list[str]
    stacks_by_lwp: dict[int, list[str]] = field(default_factory=dict)


def _section(text: str, start: str, end: str | None) -> str:
    body = text.split(start, 1)[1]
    return body.split(end, 1)[0] if end else body


def _frames(text: str) -> list[str]:
    # One entry per "#N" frame; gdb may wrap a frame over several lines.
    frames: list[str] = []
    for line in text.splitlines():
        if re.match(r"#\d+\s", line):
            frames.append(line)
        elif frames and line.startswith(" "):
            frames[-1] += " " + line.strip()
    return frames


def gdb_view(exe: Path, core: Path) -> GdbView:
    gdb = require("gdb")
    cmd = [
        gdb, "-nx", "-batch",
        "-iex", "set auto-load off",
        "-iex", "set debuginfod enabled off",
        "-iex", "set demangle-style none",
        "-ex", "set width 0",
        "-ex", "set pagination off",
        "-ex", "echo @@SIGINFO\\n",
        "-ex", "p $_siginfo.si_signo",
        "-ex", "p $_siginfo.si_code",
        "-ex", "p $_siginfo._sifields._sigfault.si_addr",
        "-ex", "echo @@CRASHING\\n",
        "-ex", "info thread",
        "-ex", "echo @@BT\\n",
        "-ex", "bt 80",
        "-ex", "echo @@ALL\\n",
        "-ex", "thread apply all bt 80",
        str(exe), str(core),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300).stdout
    generated = re.search(r"Core was generated by `([^']*)'", out)
    values = re.findall(r"^\$\d+ = (?:\(void \*\) )?(-?\w+)", _section(out, "@@SIGINFO", "@@CRASHING"), re.M)
    current = re.search(r"^\*\s+\d+\s+Thread 0x[0-9a-f]+ \(LWP (\d+)\)", _section(out, "@@CRASHING", "@@BT"), re.M)
    assert generated and len(values) == 3 and current, out[-3000:]
    stacks: dict[int, list[str]] = {}
    for chunk in re.split(r"\n(?=Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP \d+\)\))", _section(out, "@@ALL", None)):
        lwp = re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)\)", chunk.strip())
        if lwp:
            stacks[int(lwp.group(1))] = _frames(chunk)
    return GdbView(
        generated_by=generated.group(1),
        signo=int(values[0], 0),
        si_code=int(values[1], 0),
        address=int(values[2], 0),
        crashing_lwp=int(current.group(1)),
        crashing_stack=_frames(_section(out, "@@BT", "@@ALL")),
        stacks_by_lwp=stacks,
    )


@pytest.fixture(scope="module")
def views(tf_cores):
    @functools.cache
    def get(name: str):
        case = tf_cores.get(name)
        return case, gdb_view(case.exe, case.core)

    return get


def _assert_in_stack(pattern: str, frames: list[str]) -> None:
    assert any(re.search(pattern, f) for f in frames), f"{pattern!r} not in:\n" + "\n".join(frames[:40])


class TestCorpusCores:
    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_core_was_left_by_the_real_crash(self, views, name, record_property):
        case, view = views(name)
        expected = EXPECTED[name]
        record_property("build_seconds", round(case.extra["build_seconds"], 1))
        assert case.core.is_file() and case.core.stat().st_size > 0
        # The very process that ran the scenario dumped it: its pid, and its whole argv as the
        # tool recovers it from the initial stack. The kernel's own copy (pr_psargs, what gdb
        # prints) keeps only the first PSARGS_LEN - 1 bytes, wherever the repository is cloned.
        assert case.pid is not None
        with read_core(case.core) as notes:
            assert notes.pid == case.pid
            assert notes.argv == [str(a) for a in case.argv], notes.argv
            assert SCENARIOS[name].script in {Path(a).name for a in notes.argv}, notes.argv
        joined = " ".join(str(a) for a in case.argv)
        assert view.generated_by.rstrip() == joined[: PSARGS_LEN - 1].rstrip(), view.generated_by
        assert case.pid in view.stacks_by_lwp, sorted(view.stacks_by_lwp)
        assert view.signo == expected.signo
        assert view.si_code == expected.si_code
        if expected.address is not None:
            low, high = expected.address
            assert low <= view.address < high, hex(view.address)
        if expected.innermost is not None:
            assert re.search(expected.innermost, view.crashing_stack[0]), view.crashing_stack[0]
        for pattern in expected.stack:
            _assert_in_stack(pattern, view.crashing_stack)

    def test_heap_corruption_is_found_where_the_tensor_is_freed(self, views):
        # Not where the op wrote: glibc notices the damage when the buffer is released.
        _case, view = views("allocator_heap_corruption")
        frames = view.crashing_stack
        printerr = next(i for i, f in enumerate(frames) if "malloc_printerr" in f)
        tensor = next(i for i, f in enumerate(frames) if re.search(r"Tensor(D[012]Ev|::~Tensor)", f))
        assert printerr < tensor
        assert not any("RepeatInterleave" in f for f in frames)

    def test_worker_thread_crash_leaves_python_waiting_on_the_main_thread(self, views):
        case, view = views("worker_thread_segv")
        assert view.crashing_lwp != case.pid
        assert not any("_PyEval_EvalFrameDefault" in f for f in view.crashing_stack)
        main = view.stacks_by_lwp[case.pid]
        _assert_in_stack(r"_PyEval_EvalFrameDefault", main)
        _assert_in_stack(r"tensorflow", main)
        assert case.extra["call_site_line"] > 0

    def test_custom_op_frame_has_its_source_line(self, views):
        case, view = views("kernel_compute_segv")
        library = case.extra["op_library"]
        assert library.is_file()
        assert library.name == "crash_ops.so"
        assert re.search(r"crash_ops\.cc:\d+", view.crashing_stack[0])


# ---------------------------------------------------------------------------------------------
# What coreanalyze says about each core


@dataclass(frozen=True)
class Verdict:
    category: str
    fault_kind: str
    culprit: str  # regex over classification.culprit.function
    op: str | None = None  # regex over classification.op
    # regex over the culprit's module path, or THE_INTERPRETER: the file of the interpreter's own
    # code, whichever it is (libpython3.X.so of a shared build, the executable of a static one)
    culprit_module: str | None = None
    abort_message: str | None = None  # regex over classification.abort_message


# The culprit is in the interpreter's own code (support.pythons.interpreter_code_file).
THE_INTERPRETER = "<the interpreter's code>"


# LRNGrad's CHECK failure, called eagerly or as a node of a tf.function.
LRN_GRAD_CHECK_FAILURE = Verdict(
    "kernel-compute", "check-failure", r"^tensorflow::LRNGradOp<.*>::Compute$",
    op=r"LRNGrad", culprit_module=r"libtensorflow_cc\.so",
    abort_message=r"Check failed: d < dims\(\)",
)

VERDICTS: dict[str, Verdict] = {
    "kernel_compute_segv": Verdict(
        "kernel-compute", "null-deref", r"ScatterToSlotsOp::Compute",
        op=r"ScatterToSlots|crash_ops\.so", culprit_module=r"crash_ops\.so$",
    ),
    # glibc finds the damage when the tensor's buffer is freed: the culprit is that release.
    "allocator_heap_corruption": Verdict(
        "allocator", "heap-corruption", r"Buffer|Tensor|free",
        abort_message=r"double free or corruption",
    ),
    # The CHECK fires in TensorShape::dim_size on the kernel's bad index: the kernel is blamed.
    "kernel_check_failure": LRN_GRAD_CHECK_FAILURE,
    # ducc0's assertion text is the what() of the exception TensorFlow's DUCC wrapper is handling
    # when it aborts, read through the thread's exception globals; the op is the concrete kernel
    # (IRFFT's FFTCPU<false, true, 1>), not the abstract FFTBase whose Compute called it.
    "fft_zero_length_abort": Verdict(
        "kernel-compute", "abort", r"ducc0::",
        op=r"^FFTCPU<false, true, 1>$", culprit_module=r"libtensorflow_cc\.so",
        abort_message=r"^Assertion failure: no zero-sized FFTs \(fft1d_impl\.h:\d+\)$",
    ),
    "interpreter_invoke": Verdict(
        "interpreter-invoke", "invalid-access", r"tflite::ops::builtin::fully_connected::Eval",
        op=r"(?i)fully_connected", culprit_module=r"libpywrap_tflite_common\.so$",
    ),
    "protobuf_serialization": Verdict(
        "protobuf-serialization", "null-deref", r"google::protobuf::MessageLite::",
        culprit_module=r"libtensorflow_framework\.so",
    ),
    "numpy_interop": Verdict(
        "numpy-interop", "null-deref", r"TF_TensorToMaybeAliasedPyArray",
        culprit_module=r"lib_pywrap_tensorflow_common\.so$",
    ),
    "worker_thread_segv": Verdict(
        "kernel-compute", "null-deref", r"ScatterToSlotsOp::Compute",
        op=r"ScatterToSlots|crash_ops\.so", culprit_module=r"crash_ops\.so$",
    ),
    "interpreter_invoke_model_file": Verdict(
        "interpreter-invoke", "invalid-access", r"tflite::ops::builtin::fully_connected::Eval",
        op=r"(?i)fully_connected", culprit_module=r"libpywrap_tflite_common\.so$",
    ),
    "interpreter_invoke_xnnpack": Verdict(
        "interpreter-invoke", "invalid-access", r"tflite::xnnpack::.*SubgraphInvoke",
        culprit_module=r"libpywrap_tflite_common\.so$",
    ),
    "graph_check_failure": LRN_GRAD_CHECK_FAILURE,
    "kernel_overwritten": Verdict(
        "kernel-compute", "null-deref", r"OverwriteOwnKernelOp::Compute",
        op=r"OverwriteOwnKernel|crash_ops\.so", culprit_module=r"crash_ops\.so$",
    ),
    # The op is read from the stack's memory (test_tf_op_beyond.py has the details).
    "caught_exception_no_gil": Verdict(
        "kernel-compute", "null-deref", r"^PyErr_Occurred$", op=r"^TensorListSetItem$", culprit_module=THE_INTERPRETER,
    ),
    "xla_jit_segv": Verdict("xla", "invalid-access", r"^custom-call$", op=r"^XlaLaunch$"),
    "dataset_bad_alloc": Verdict(
        "tf-data", "out-of-memory", r"InputBuffer", op=r"^FixedLengthRecordDataset$", culprit_module=r"libtensorflow_framework\.so",
    ),
    "dataset_exception_no_gil": Verdict(
        "tf-data", "null-deref", r"^PyErr_Occurred$", op=r"^ParallelInterleaveDataset$", culprit_module=THE_INTERPRETER,
    ),
    "deep_recursion_overflow": Verdict(
        "kernel-compute", "stack-overflow", r"TensorList|VariantTensorData|ToProto|EncodeVariant", op=r"^SerializeTensorOp$",
        culprit_module=r"libtensorflow_framework\.so",
    ),
}


def test_every_scenario_has_a_verdict():
    assert set(VERDICTS) == set(SCENARIOS)


@pytest.fixture(scope="module")
def reports(tf_reports):
    """(case, report) of the session's one plain analysis of each core."""

    def get(name: str):
        case, report, _seconds = tf_reports(name)
        return case, report

    return get


class TestVerdicts:
    @pytest.mark.parametrize("name", sorted(VERDICTS))
    def test_classification(self, reports, name):
        case, report = reports(name)
        expected = VERDICTS[name]
        c = report["classification"]
        assert c["category"] == expected.category, c
        assert c["fault_kind"] == expected.fault_kind, c
        assert c["culprit"]["function"] and re.search(expected.culprit, c["culprit"]["function"]), c["culprit"]
        if expected.culprit_module == THE_INTERPRETER:
            assert is_interpreter_code(c["culprit"]["module"], case.exe), (c["culprit"], interpreter_code_file(case.exe))
        elif expected.culprit_module:
            assert re.search(expected.culprit_module, c["culprit"]["module"] or ""), c["culprit"]
        if expected.op:
            assert c.get("op") and re.search(expected.op, c["op"]), c.get("op")
        if expected.abort_message:
            assert c["abort_message"] and re.search(expected.abort_message, c["abort_message"]), c["abort_message"]
        assert c["summary"].strip()
        assert c["advice"]
        assert c["evidence"]
        # A key for grouping the same crash across cores: no addresses in it.
        assert c["signature"] and not re.search(r"0x[0-9a-f]{6,}", c["signature"]), c["signature"]
        thread = crashed_thread(report)
        assert thread["crashed"] is True
        assert report["core"]["pid"] == case.pid

    def test_heap_corruption_advice_points_before_the_abort(self, reports):
        _case, report = reports("allocator_heap_corruption")
        advice = " ".join(report["classification"]["advice"])
        assert re.search(r"MALLOC_CHECK_|AddressSanitizer|ASan", advice), advice

    def test_custom_op_is_named_with_its_library(self, reports):
        case, report = reports("kernel_compute_segv")
        c = report["classification"]
        text = " ".join([c["summary"], *c["advice"], c.get("op") or ""])
        assert "crash_ops.so" in text, text
        assert "ScatterToSlots" in text, text

    def test_worker_thread_crash_is_launched_from_the_marked_line(self, reports):
        case, report = reports("worker_thread_segv")
        launched = report["launched_from"]
        assert launched is not None
        assert launched["tid"] == case.pid
        assert launched["tid"] != report["crashing_thread"]
        assert launched["file"].endswith("worker_thread_segv.py")
        assert launched["line"] == case.extra["call_site_line"]


def test_environment_block_names_the_installed_versions(reports):
    case, report = reports("kernel_check_failure")
    env = report["environment"]
    assert env["tensorflow_version"] == installed_version(case.exe, env["tensorflow_package"])
    assert env["numpy_version"] == installed_version(case.exe, "numpy")
    assert re.fullmatch(r"v\d+\.\d+\.\d+\S*-g[0-9a-f]{7,}", env["tensorflow_git_version"])
    assert env["python_version"].startswith("3.")
    owners = {lib: p["name"] for p in env["packages"] for lib in p["libraries"]}
    assert owners["libtensorflow_framework.so.2"] == env["tensorflow_package"]
    assert owners.get("_message.abi3.so", "protobuf") == "protobuf"  # not google-pasta
    assert all(owner == "numpy" for lib, owner in owners.items() if lib.startswith("_multiarray_umath"))


def test_packages_of_the_process_from_its_own_memory(reports):
    """The packages come from the dead process's sys.modules: where each top-level module was
    loaded from and its version (its __version__, or its dist-info named in memory)."""
    case, report = reports("kernel_check_failure")
    packages = {p["module"]: p for p in report["environment"]["packages"] if p.get("module")}
    site = Path(packages["tensorflow"]["path"]).parent.parent
    for module, distribution in (("tensorflow", report["environment"]["tensorflow_package"]), ("numpy", "numpy")):
        package = packages[module]
        assert package["version"] == installed_version(case.exe, distribution), package
        assert package["path"] == str(site / module / "__init__.py")
        assert package["version_from"] == "__version__"
        assert "version_here" not in package
    from_dist_info = [p for p in packages.values() if p["version_from"] == "dist-info"]
    assert from_dist_info, packages
    for package in from_dist_info:
        assert package["version"] == installed_version(case.exe, package["name"]), package
    assert all(Path(p["path"]).is_relative_to(site) for p in packages.values())


def test_packages_table_in_markdown_and_html(tf_cores, tmp_path):
    from support.clirun import run_cli

    case = tf_cores.get("kernel_check_failure")
    version = installed_version(case.exe, "numpy")
    for fmt in ("markdown", "html"):
        out = tmp_path / f"report.{fmt}"
        run = run_cli(str(case.core), "--python", str(case.exe), "--format", fmt, "-o", str(out))
        assert run.code == 0, run.stderr
        text = out.read_text()
        assert "Packages of the process" in text
        row = f"| `numpy` | `{version}` |" if fmt == "markdown" else f"<td>numpy</td><td><code>{version}</code></td>"
        assert row in text
