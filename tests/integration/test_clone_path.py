"""No test depends on where the repository is cloned.

The kernel keeps only the first 79 bytes of a process's arguments in a core (NT_PRPSINFO), gdb
prints a path as it is, and a temporary directory or a user's checkout can be long and hold
spaces. The path-sensitive cases (the core's own argv, the TensorFlow corpus's identity checks,
the Python frames' file names, the byte-identical reports) run again here from a copy of the
repository under a directory name of more than 100 characters with spaces in it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO, SHARED_DATA
from support.require import require

LONG_NAME = "checkouts of a user with spaces in the name " + "and a deep project folder " * 3
# One case of each kind that once depended on the clone's path.
PATH_SENSITIVE = [
    "tests/unit/test_report_snapshots.py",
    "tests/integration/test_corefile.py",
    "tests/integration/test_pystacks.py::test_crashing_thread_frames_are_the_scripts_lines",
    "tests/integration/test_pystacks.py::test_crash_in_a_native_worker_names_the_waiting_python_line",
    "tests/integration/test_tf_corpus.py::TestCorpusCores::test_core_was_left_by_the_real_crash[kernel_check_failure]",
    # Paths with spaces: in pasted gdb frames (the crashers' sources), in command lines the
    # tests build (gdb's program setting, a pager), in a tool's printed answer.
    "tests/integration/test_triage_agreement.py::test_c_crash_text_agrees_with_core[null_thread]",
    "tests/integration/test_triage_agreement.py::test_tensorflow_crash_text_agrees_with_core[kernel_check_failure]",
    "tests/integration/test_gdb_commands.py::test_ca_verdict_prints_the_cores_verdict",
    "tests/integration/test_render.py::test_long_output_on_a_terminal_goes_through_the_pager",
    "tests/integration/test_packaging.py::test_editable_install_runs_from_the_source_tree",
]


def _tracked_files() -> list[str]:
    git = require("git")
    out = subprocess.run([git, "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


@pytest.fixture(scope="module")
def long_clone(tmp_path_factory) -> Path:
    clone = tmp_path_factory.mktemp("clone") / LONG_NAME.strip() / "coreanalyze"
    assert len(str(clone)) > 100 and " " in str(clone)
    for name in _tracked_files():
        source = REPO / name
        if source.is_file():  # a file deleted in the working tree is not copied
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return clone


@pytest.mark.slow
@pytest.mark.tf
def test_path_sensitive_cases_pass_from_a_long_clone_path(long_clone):
    env = dict(os.environ, COREANALYZE_SHARED_DATA=str(SHARED_DATA))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PATH_SENSITIVE],
        cwd=long_clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert " failed" not in tail and " error" not in tail, tail
    counts = re.search(r"(\d+) passed", tail)
    assert counts and int(counts.group(1)) >= 20, tail
