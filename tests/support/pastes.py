"""What a user pastes from the suite's real cores: plain `gdb -batch -ex bt` output, and which
cores a pasted `bt` can stand for (test_triage_agreement.py, test_triage_format_invariance_cores.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.require import require

# The C crashers whose pasted `bt` is compared with their core's analysis.
C_CASES = ["null_thread", "double_free", "assert_fail", "divzero", "ud2", "sigbus", "null_callback"]
# TensorFlow crashes whose verdict rests on memory a pasted `bt` does not show: the op found in the
# crashing thread's stack memory past the unwound frames (a caught exception's thrower, a dataset
# iterator, the far end of a 70,000-frame recursion) or in XLA's JIT objects. The core's analysis
# of these is checked in test_tf_op_beyond.py and test_tf_corpus.py.
BEYOND_THE_TEXT = {"caught_exception_no_gil", "dataset_exception_no_gil", "dataset_bad_alloc", "xla_jit_segv", "deep_recursion_overflow"}


def gdb_backtrace_text(exe: Path, core: Path) -> str:
    """`gdb -batch -ex bt` on a core, stdout and stderr as a terminal shows them."""
    gdb = require("gdb")
    cmd = [gdb, "-nx", "-batch", "-iex", "set auto-load off", "-iex", "set debuginfod enabled off",
           "-ex", "set pagination off", "-ex", "bt", str(exe), str(core)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return proc.stdout + proc.stderr
