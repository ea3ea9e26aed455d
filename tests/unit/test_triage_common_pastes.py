"""What users paste when a process died without a core, in the shapes runners, shells and
TensorFlow itself print them, each read for what it says instead of refused: a worker that died
under pytest-xdist or a process pool, the shell's "Killed" at the end of a progress bar, a
container killed for its memory limit, a negative exit code, more of glibc's translated verdicts, a
BSD assert's source file, and the errors TensorFlow raises instead of dying (tf.errors, a kernel's
OP_REQUIRES, TensorFlow Lite's error reporter, a DLL whose initialization failed)."""

from __future__ import annotations

import pytest

from coreanalyze.triage import triage_text


def verdict(text: str) -> tuple[str, str]:
    c = triage_text(text, "paste.txt").classification
    return c.category, c.fault_kind


@pytest.mark.parametrize(
    "text",
    [
        "[gw1] node down: Not properly terminated\nreplacing crashed worker gw1",
        "worker 'gw0' crashed while running 'tests/test_model.py::test_predict'",
        "concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly while the future was running or pending.",
        "joblib.externals.loky.process_executor.TerminatedWorkerError: A worker process managed by the executor was unexpectedly terminated.",
    ],
)
def test_a_runners_word_that_its_worker_died_is_a_crash_of_unknown_kind(text):
    assert verdict(text) == ("unknown", "unknown")


@pytest.mark.parametrize(
    "line",
    [
        "  17/1875 [..............................] - ETA: 3:12 - loss: 2.3012 - accuracy: 0.1121Killed",
        " 12%|█▏        | 120/1000 [00:31<03:50,  3.82it/s]Killed",
    ],
)
def test_killed_at_the_end_of_a_progress_bar_is_sigkill(line):
    report = triage_text(line, "paste.txt")
    assert report.core.signal.name == "SIGKILL"


def test_killed_inside_a_sentence_is_not_a_verdict():
    with pytest.raises(Exception):  # noqa: B017 - a refusal (BadInput): nothing died
        triage_text("The job that was Killed yesterday is fine now; training resumed.", "paste.txt")


def test_a_pod_killed_for_its_memory_limit_is_out_of_memory():
    text = "    State:          Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
    report = triage_text(text, "describe.txt")
    assert (report.core.signal.name, report.classification.fault_kind) == ("SIGKILL", "out-of-memory")


@pytest.mark.parametrize("text", ["Process exited with code -11", "training exited with exit code -11"])
def test_a_negative_exit_code_is_the_signal(text):
    assert triage_text(text, "paste.txt").core.signal.name == "SIGSEGV"


def test_a_bsd_asserts_source_file_names_the_subsystem():
    text = "Assertion failed: (tensor->bytes > 0), function Prepare, file tensorflow/lite/kernels/reshape.cc, line 87.\nAbort trap: 6"
    assert verdict(text) == ("interpreter-invoke", "abort")


def test_a_tensorflow_error_raised_in_python_is_a_stated_error_of_its_op():
    text = (
        "Traceback (most recent call last):\n  File \"model.py\", line 12, in <module>\n    y = tf.nn.conv2d(x, w, 1, 'SAME')\n"
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: input depth must be evenly divisible by filter depth: 3 vs 4 [Op:Conv2D]"
    )
    assert verdict(text) == ("kernel-compute", "unknown")


@pytest.mark.parametrize(
    "source, category",
    [("strided_slice_op.cc:117", "kernel-compute"), ("tensorflow/core/kernels/data/map_dataset_op.cc:312", "tf-data")],
)
def test_a_kernels_op_requires_is_placed_by_its_own_file_not_the_log_prefixs(source, category):
    text = f"2024-01-02 10:00:00.123456: W tensorflow/core/framework/op_kernel.cc:1816] OP_REQUIRES failed at {source} : INVALID_ARGUMENT: slice index 5 of dimension 0 out of bounds."
    assert verdict(text) == (category, "unknown")


def test_tensorflow_lites_error_reporter_is_a_stated_interpreter_error():
    text = (
        "ERROR: tensorflow/lite/kernels/fully_connected.cc:360 NumDimensions(input) != 2 (3 != 2)\n"
        "ERROR: Node number 4 (FULLY_CONNECTED) failed to prepare.\n"
        "RuntimeError: tensorflow/lite/kernels/fully_connected.cc:360 NumDimensions(input) != 2 (3 != 2)Node number 4 (FULLY_CONNECTED) failed to prepare."
    )
    assert verdict(text) == ("interpreter-invoke", "unknown")


def test_a_dll_whose_initialization_failed_is_a_stated_load_error():
    text = 'OSError: [WinError 1114] A dynamic link library (DLL) initialization routine failed. Error loading "C:\\Python311\\Lib\\site-packages\\tensorflow\\python\\_pywrap_tensorflow_internal.pyd" or one of its dependencies.'
    assert verdict(text) == ("library-load", "unknown")


def test_any_exception_a_program_ended_with_is_a_stated_error_not_a_refusal():
    text = (
        "Traceback (most recent call last):\n  File \"serve.py\", line 8, in <module>\n    model = load(path)\n"
        "  File \"/opt/app/loader.py\", line 31, in load\n    raise ModelFormatError(f\"unsupported version {v}\")\n"
        "loader.ModelFormatError: unsupported version 7"
    )
    c = triage_text(text, "paste.txt").classification
    assert (c.category, c.fault_kind) == ("unknown", "unknown")
    assert c.abort_message == "loader.ModelFormatError: unsupported version 7"


def test_an_exception_printed_before_a_crash_does_not_decide_it():
    text = (
        "ValueError: could not broadcast input array from shape (3,) into shape (4,)\n"
        "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f3c2a1b2740 (most recent call first):\n"
        "  File \"/usr/lib/python3/dist-packages/tensorflow/python/eager/execute.py\", line 53 in quick_execute\n"
        "Segmentation fault (core dumped)"
    )
    assert triage_text(text, "paste.txt").classification.fault_kind == "invalid-access"


def test_a_warning_is_not_an_error_the_program_ended_with():
    with pytest.raises(Exception):  # noqa: B017 - a refusal (BadInput): nothing failed
        triage_text("UserWarning: The given NumPy array is not writable\n  x = torch.from_numpy(a)", "paste.txt")


@pytest.mark.parametrize(
    "text, signal",
    [
        # Japanese glibc's polite ending
        ("セグメンテーション違反です (コアダンプ)", "SIGSEGV"),
        ("不正な命令です (コアダンプ)", "SIGILL"),
        ("バスエラーです", "SIGBUS"),
        ("Segmentatiefout (geheugendump gemaakt)", "SIGSEGV"),
        ("Afgebroken (geheugendump gemaakt)", "SIGABRT"),
        ("Segmenteringsfel (core dumped)", "SIGSEGV"),
        ("Naruszenie ochrony pamięci (zrzut pamięci)", "SIGSEGV"),
        ("make: *** [Makefile:5: run] Przerwane (zrzut pamięci)", "SIGABRT"),
        ("Neoprávněný přístup do paměti (SIGSEGV) (core dumped [obraz paměti uložen])", "SIGSEGV"),
        ("Neúspěšně ukončen (SIGABRT)", "SIGABRT"),
        ("程式記憶體區段錯誤 (核心已傾印)", "SIGSEGV"),
    ],
)
def test_glibcs_translated_verdicts(text, signal):
    assert triage_text(text, "paste.txt").core.signal.name == signal
