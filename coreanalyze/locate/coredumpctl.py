"""systemd-coredump's cores through `coredumpctl`, where systemd runs: its list (which knows
cores this user may not read in /var/lib/systemd/coredump, and those kept in the journal) and
`coredumpctl dump`, which writes one of them to a file of our choosing.

Where coredumpctl is missing or fails (a container, no journal), the finder reads the store's
directory instead (candidates.systemd_store).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

from coreanalyze.base.errors import BadInput
from coreanalyze.base.safenames import without_controls

TIMEOUT = 30.0
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Entry:
    pid: int
    exe: str
    time: float  # epoch seconds
    present: bool  # the core is still stored


def parse_list(text: str) -> list[Entry]:
    """`coredumpctl --json=short list`'s answer: a JSON array of {time (µs), pid, exe, corefile, ...}."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    entries = []
    for item in data[:MAX_ENTRIES] if isinstance(data, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("pid"), int) or not isinstance(item.get("time"), int):
            continue
        entries.append(Entry(
            pid=item["pid"], exe=without_controls(str(item.get("exe") or ""), 1024), time=item["time"] / 1e6,
            present=item.get("corefile") == "present",
        ))  # fmt: skip
    return entries


def listed() -> list[Entry] | None:
    """The cores coredumpctl knows; None where it is missing or does not work here."""
    program = shutil.which("coredumpctl")
    if program is None:
        return None
    try:
        run = subprocess.run([program, "--no-pager", "--no-legend", "--json=short", "list"],
                             capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    # "No coredumps found." exits 1: an answer, not a failure.
    if run.returncode != 0 and "No coredumps found" not in run.stderr:
        return None
    return parse_list(run.stdout) if run.stdout.strip() else []


def dump(pid: int, target: str) -> None:
    """Write the core of process `pid` to `target` (a path this tool chose)."""
    program = shutil.which("coredumpctl") or "coredumpctl"
    try:
        run = subprocess.run([program, "--no-pager", f"--output={target}", "dump", str(pid)],
                             capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"coredumpctl dump {pid} failed: {e}") from None
    if run.returncode != 0:
        raise BadInput(f"coredumpctl dump {pid} failed: {without_controls(run.stderr.strip(), 300)}")
