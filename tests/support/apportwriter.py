""".crash files written by apport's own writer: a real `problem_report.ProblemReport` with a
real core, written under Debian's `/usr/bin/python3`, as apport writes them in /var/crash.

The module is Ubuntu's `python3-problem-report` where `/usr/bin/python3` has it (./setup.sh
installs it where apt offers it); Debian's archive has no apport, so elsewhere it is apport's
unchanged problem_report.py in tests/support/apport/ (its README says where it comes from).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.paths import TESTS
from support.pythons import SYSTEM_PYTHON
from support.require import missing

VENDORED = TESTS / "support" / "apport"

# Runs under /usr/bin/python3: the fields as apport's text values, the core as apport's
# `(file, encode=True, limit=None, fail_on_empty=True)` file reference, exactly as data/apport
# hands it the kernel's core on stdin; a zstd core as the CompressedFile apport makes of a core
# systemd-coredump stored.
_WRITE = """
import json, sys
import problem_report
spec = json.load(sys.stdin)
report = problem_report.ProblemReport("Crash")
for key, value in spec["fields"].items():
    report[key] = value
if spec["core"] and spec["core"].endswith(".zst"):
    report["CoreDump"] = problem_report.CompressedFile(spec["core"])  # systemd-coredump's core, taken over
elif spec["core"]:
    report["CoreDump"] = (spec["core"], True, None, True)
with open(spec["out"], "wb") as f:
    report.write(f)
print(problem_report.__file__)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import problem_report"], env=env, capture_output=True)
    if probe.returncode != 0:
        env["PYTHONPATH"] = str(VENDORED)
    return env


def write_crash(out: Path, core: Path | None, fields: dict[str, str]) -> Path:
    """Write `out` with apport's writer: `fields` as text fields, `core` as CoreDump (none
    when None, as apport leaves it out; a `.zst` core is stored as it is); returns `out`."""
    if not SYSTEM_PYTHON.exists():
        missing("/usr/bin/python3 (apport's problem_report runs under the system Python)")
    spec = {"fields": fields, "core": str(core) if core else None, "out": str(out)}
    run = subprocess.run([str(SYSTEM_PYTHON), "-c", _WRITE], input=json.dumps(spec), env=_env(), capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"apport's problem_report could not write {out}: {run.stderr[-2000:]}")
    return out


def crash_fields(case) -> dict[str, str]:
    """The fields apport writes beside the core, from what the test knows of the crash (a
    support.coregen.CrashCase): data/apport's ExecutablePath, ProcCmdline, ProcCwd and Signal,
    which apport reads from the live process and the tests know from the crasher's run."""
    return {
        "ExecutablePath": str(case.exe),
        "ProcCmdline": " ".join(case.argv),
        "ProcCwd": str(case.workdir),
        "Signal": str(case.extra.get("signal", 11)),
    }


def read_back(path: Path) -> dict[str, object]:
    """apport's own reading of the file: its keys and the CoreDump's size (apport's loader is
    the reference the tests hold coreanalyze's reader to)."""
    script = (
        "import json, sys, problem_report\n"
        "r = problem_report.ProblemReport()\n"
        "r.load(open(sys.argv[1], 'rb'))\n"
        "core = r.get('CoreDump')\n"
        "print(json.dumps({'keys': sorted(r.keys()), 'core_size': len(core) if core is not None else None,"
        " 'fields': {k: r[k] for k in r if isinstance(r[k], str)}}))\n"
    )
    run = subprocess.run([str(SYSTEM_PYTHON), "-c", script, str(path)], env=_env(), capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"apport's problem_report could not read {path}: {run.stderr[-2000:]}")
    return json.loads(run.stdout)
