"""The kernel's out-of-memory killer in a kernel log (dmesg, journalctl -k): the process did not
crash, the kernel killed it with SIGKILL because memory (of the machine or of its cgroup) ran out.

    [ 812.123] python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0
    [ 812.130] memory: usage 8388608kB, limit 8388608kB, failcnt 5321
    [ 812.140] oom-kill:constraint=CONSTRAINT_MEMCG,...,task=python3,pid=4242,uid=1000
    [ 812.141] Memory cgroup out of memory: Killed process 4242 (python3) total-vm:12345678kB, anon-rss:8123456kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:17000kB oom_score_adj:0

Older kernels: "Out of memory: Kill process 4242 (python3) score 912 or sacrifice child" and then
"Killed process 4242 (python3) total-vm:..., anon-rss:...". The killed process's resident
memory is what it had in use; a cgroup's "limit" is the limit it hit.
"""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text

FORMAT = "oom-kill"

_KILLED = re.compile(
    r"(?:(Memory cgroup out of memory)|Out of memory(?: \(oom_kill_allocating_task\))?)?:? ?Killed process (\d{1,9}) \(([^)]{0,64})\)"
    r"(?: total-vm:(\d{1,15})kB, anon-rss:(\d{1,15})kB)?"
)
# SLURM's account of the kill: "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup."
_SLURM = re.compile(r"Detected \d{1,9} oom-kill event\(s\) in \S{1,200} cgroup")
_CGROUP_USAGE = re.compile(r"\bmemory: usage (\d{1,15})kB, limit (\d{1,15})kB")
_MEMCG = re.compile(r"oom-kill:constraint=CONSTRAINT_MEMCG")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    cgroup = limit = None
    for i, s in enumerate(lines):
        if claimed[i] or "memory" not in s.lower() and "Killed process" not in s and "oom-kill" not in s:
            continue
        usage = _CGROUP_USAGE.search(s)
        if usage and limit is None:
            limit = int(usage.group(2)) * 1024
        cgroup = cgroup or bool(_MEMCG.search(s))
        m = _KILLED.search(s) if "Killed process" in s else None
        if m:
            claimed[i] = 1
            return [_finding(i, m, cgroup or bool(m.group(1)), limit)]
        slurm = _SLURM.search(s) if "oom-kill event" in s else None
        if slurm:
            claimed[i] = 1
            return [_slurm_finding(i, slurm)]
    return []


def _slurm_finding(i: int, m: re.Match[str]) -> fd.Finding:
    finding = fd.Finding(FORMAT, i)
    finding.set_signal("SIGKILL", fd.SIGNAL_NAMED, sender_pid=0)
    finding.oom = model.OomInfo(allocator="cgroup")
    finding.detail = "killed by the kernel's OOM killer: the job's memory cgroup limit ran out"
    finding.add_message(gpu_text.MESSAGE_GPU_LOG, m.group(0))
    return finding


def _finding(i: int, m: re.Match[str], cgroup: bool, limit: int | None) -> fd.Finding:
    finding = fd.Finding(FORMAT, i)
    finding.pid = int(m.group(2))
    finding.cmdline = m.group(3) or None
    # The kernel sent it: no sender pid in the process, SI_KERNEL.
    finding.set_signal("SIGKILL", fd.SIGNAL_NAMED, sender_pid=0)
    rss = int(m.group(5)) * 1024 if m.group(5) else None
    finding.oom = model.OomInfo(allocator="cgroup" if cgroup else "kernel OOM killer", in_use=rss, limit=limit)
    what = "its memory cgroup's limit" if cgroup else "the machine's memory"
    finding.detail = f"killed by the kernel's OOM killer: {what} ran out"
    finding.add_message(gpu_text.MESSAGE_GPU_LOG, m.group(0))
    return finding
