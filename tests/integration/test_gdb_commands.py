"""`source gdb_scripts/coreanalyze.py` in an interactive gdb on a real core: `py-stacks` shows the
native frames with the script's Python frames inside the evaluation loop running them, and
`ca-verdict` prints the core's verdict."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.pycrash import crash, marker_line
from support.require import require

from coreanalyze.gdb.debugger import PYSTACKS_SCRIPT

SCRIPT = PYSTACKS_SCRIPT.parent / "coreanalyze.py"


def interactive_gdb(case, *commands: str) -> str:
    """gdb reading commands as a person types them (not --batch), on the case's core."""
    gdb = require("gdb")
    typed = "\n".join([f"source {SCRIPT}", *commands, "quit", ""])
    run = subprocess.run(
        [gdb, "-nx", "-q", "-iex", "set debuginfod enabled off", str(case.exe), str(case.core)],
        input=typed, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.parametrize("which", ["3.12", "system"])
def test_py_stacks_interleaves_the_python_frames(python_cores, which):
    case = crash(python_cores, "three_deep.py", which)
    script = case.extra["script"]
    out = interactive_gdb(case, "py-stacks").splitlines()
    header = next(i for i, line in enumerate(out) if re.match(r"^Thread \d+ \(LWP \d+\)$", line))
    lines = [line.strip() for line in out[header + 1 :] if line.startswith("  #")]
    python = [line for line in lines if "(Python)" in line]
    assert [re.sub(r"^#\d+\s+", "", line) for line in python[1:]] == [
        f"(Python) load_weights at {script}:{marker_line(script, 'CRASH-LINE')}",
        f"(Python) build_model at {script}:{marker_line(script, 'CALL-LOAD')}",
        f"(Python) train at {script}:{marker_line(script, 'CALL-BUILD')}",
        f"(Python) <module> at {script}:{marker_line(script, 'CALL-TRAIN')}",
    ]
    # Frames are numbered in one sequence, the fault innermost, the Python frames inside the
    # evaluation loop that runs them (even the stripped interpreter exports its name).
    assert [int(line.split()[0][1:]) for line in lines] == list(range(len(lines)))
    assert "(Python)" not in lines[0]
    assert "_PyEval_EvalFrameDefault" in lines[lines.index(python[-1]) + 1]
    assert "warning:" not in "\n".join(out)


def test_ca_verdict_prints_the_cores_verdict(python_cores):
    case = crash(python_cores, "three_deep.py", "3.12")
    # The setting is a command line: an interpreter path with spaces in it is quoted.
    out = interactive_gdb(case, f"set coreanalyze-program {shlex.quote(sys.executable)} -m coreanalyze", "ca-verdict")
    assert "SIGSEGV (SEGV_MAPERR) at 0x10 — null-deref in PyBytes_FromStringAndSize" in out
    report = Path(re.search(r"report\s+(\S+report\.html)", out).group(1))
    assert report.read_text().startswith("<!DOCTYPE html>")
