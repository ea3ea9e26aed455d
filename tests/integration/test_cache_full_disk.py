"""A full disk while the cache is written costs the cache, never the report: a TensorFlow core's
first run with its cache on a 2 MiB file system (a tmpfs in a user and mount namespace of its
own) gives the same report as with room, and still exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.require import require


@pytest.mark.tf
def test_a_full_cache_disk_gives_the_same_report(tf_cores, tmp_path):
    unshare = require("unshare")
    require("flock")
    case = tf_cores.get("kernel_compute_segv")
    roomy, full = tmp_path / "roomy", tmp_path / "full"
    full.mkdir()

    def analyze(cache, out, wrap=()):
        env = {**os.environ, "COREANALYZE_CACHE_DIR": str(cache)}
        argv = [sys.executable, "-m", "coreanalyze", str(case.core), "--python", str(case.exe), "--format", "json", "-o", str(out)]
        return subprocess.run([*wrap, *argv], env=env, capture_output=True, text=True, timeout=600)

    plain = analyze(roomy, tmp_path / "roomy.json")
    assert plain.returncode == 0, plain.stderr
    # A tmpfs smaller than one library's symbol order (~5 MiB): every cache write runs out of room.
    # df after the run: the cache must have been written there, else nothing was tested.
    # The cache entries for later runs are written by a process the command leaves behind
    # (coreanalyze.base.later): df once it has let go of the cache's lock.
    script = ('mount -t tmpfs -o size=2m tmpfs "$0" || exit 99; "$@"; rc=$?; '
              'flock -x "$0/.later.lock" true 2>/dev/null; df -k "$0" | tail -1 >&2; exit $rc')  # fmt: skip
    wrap = [unshare, "-Urm", "sh", "-c", script, str(full)]
    cramped = analyze(full, tmp_path / "full.json", wrap)
    assert cramped.returncode != 99, f"could not mount a small file system: {cramped.stderr.strip()}"
    assert cramped.returncode == 0, cramped.stderr
    # The cache was written there until it ran out of room (the symbol order alone is larger).
    used_kb = int(cramped.stderr.strip().splitlines()[-1].split()[2])
    assert used_kb >= 1024, cramped.stderr
    assert json.loads((tmp_path / "full.json").read_text()) == json.loads((tmp_path / "roomy.json").read_text())
    assert "Traceback" not in cramped.stderr
