"""bench/growth.py runs end to end on a few cores: it makes them, times the batch and pystack,
reads the batch's outcome and the cache, and removes its work directory. No figure is held to
a value here (wall times on a shared machine): only that every part ran."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.require import require
from support.tfcores import require_tensorflow

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "growth.py"


@pytest.mark.tf
def test_growth_benchmark_runs_end_to_end(tmp_path):
    require_tensorflow()
    require("gdb")
    require(module="pystack", what="pystack (test dependency)")
    workdir, results = tmp_path / "work", tmp_path / "results.json"
    argv = [sys.executable, str(SCRIPT), "--cores", "3", "--scenario-subset", "small", "--no-older",
            "--workdir", str(workdir), "--json", str(results)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(results.read_text())
    assert figures["batch"]["run"]["exit_code"] == 0
    totals = figures["batch"]["outcome"]["totals"]
    assert (totals["cores"], totals["analyzed"], totals["failed"]) == (3, 3, 0)
    assert figures["batch"]["outcome"]["groups"] == 2  # the two crashes of the small subset
    assert figures["batch"]["cache_mb"] > 0 and "libsymbols" in figures["batch"]["cache_info"]
    assert figures["batch"]["outcome"]["per_core"]["median_s"] > 0  # each core's time, from cores.jsonl
    pystack = figures["pystack"]["all"]
    assert (pystack["cores"], pystack["failed"]) == (3, 0) and pystack["per_core_s"] > 0
    assert not workdir.exists()  # the cores are not left on disk without --keep
