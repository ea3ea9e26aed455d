"""Run the real command line in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support.contract import check_files, check_text, output_files
from support.paths import REPO


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 600, env: dict | None = None, stdin: str | None = None,
    base_env: dict | None = None,
) -> CliRun:  # fmt: skip
    """base_env: the environment `env` adds to (default: this process's, as it is now)."""
    full_env = dict(os.environ if base_env is None else base_env, NO_COLOR="1", **(env or {}))
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.pop("COREANALYZE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "coreanalyze", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin,
    )
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr
    # Every JSON report a command writes fits the shipped schema (support/contract.py).
    check_text(proc.stdout, f"the JSON on stdout of coreanalyze {' '.join(args)}")
    check_files(output_files(args, cwd))
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


def analyze_json(core: Path, *extra: str, cwd: Path | None = None, base_env: dict | None = None) -> dict:
    run = run_cli(str(core), "--format", "json", "-o", "-", *extra, cwd=cwd, base_env=base_env)
    assert run.code == 0, run.stderr
    return run.json


def crashed_thread(report: dict) -> dict:
    return next(t for t in report["threads"] if t["tid"] == report["crashing_thread"])


def native_functions(thread: dict) -> list[str]:
    return [f["function"] or "" for f in thread["frames"] if f["kind"] == "native"]
