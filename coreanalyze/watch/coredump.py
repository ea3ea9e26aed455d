"""systemd-coredump's record of a crash, for a core's record (CoreRecord.coredump) and the
fleet's breakdowns by unit and by container.

Three sources, each for what it has:
- the file's extended attributes, which systemd-coredump sets on every core it stores
  (user.coredump.pid, uid, gid, signal, timestamp, rlimit, hostname, comm, exe: batch/inputs.py
  reads them into CoreInput.xattrs);
- the file's name, core.COMM.UID.BOOT_ID.PID.USEC[.zst]: the boot id;
- the journal entry systemd-coredump logs with it (journal.py): the unit, the slice, the
  command line, the control group (and from it the container), the boot id, the host name.
The attributes win over the journal, the journal over the name. Every value is cleaned and
bounded like the attributes are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.base.safenames import without_controls
from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.store import CoreRecord
from coreanalyze.rulesdata.kinds import WATCH_CONTAINERS

CONTAINERS = Path(__file__).resolve().parent / "containers.toml"
MAX_CHARS = 1024
HEX_ID = re.compile(r"^[0-9a-f]{64}$")
SHORT_ID = 12

# record.coredump key -> the attribute (user.coredump.<name>) and the journal field it comes from
FROM_XATTR = {"hostname": "hostname", "pid": "pid", "uid": "uid", "signal": "signal", "timestamp": "timestamp", "comm": "comm", "exe": "exe"}
FROM_JOURNAL = {
    "unit": "COREDUMP_UNIT",
    "user_unit": "COREDUMP_USER_UNIT",
    "slice": "COREDUMP_SLICE",
    "cmdline": "COREDUMP_CMDLINE",
    "cgroup": "COREDUMP_CGROUP",
    "container_cmdline": "COREDUMP_CONTAINER_CMDLINE",
    "boot_id": "_BOOT_ID",
    "hostname": "COREDUMP_HOSTNAME",
    "pid": "COREDUMP_PID",
    "uid": "COREDUMP_UID",
    "signal": "COREDUMP_SIGNAL",
    "timestamp": "COREDUMP_TIMESTAMP",
    "comm": "COREDUMP_COMM",
    "exe": "COREDUMP_EXE",
}


@dataclass(frozen=True)
class ContainerRule:
    runtime: str
    cgroup: re.Pattern


@lru_cache(maxsize=1)
def container_rules() -> tuple[ContainerRule, ...]:
    data = rulesdata.shipped(CONTAINERS, WATCH_CONTAINERS)
    return tuple(ContainerRule(t["runtime"], re.compile(t["cgroup"])) for t in data["container"])


def container_of(cgroup: str) -> str | None:
    """"docker:0123456789ab" for a process in a container's control group; None otherwise."""
    for rule in container_rules():
        match = rule.cgroup.search(cgroup)
        if match:
            ident = match.group(1)
            return f"{rule.runtime}:{ident[:SHORT_ID] if HEX_ID.match(ident) else ident}"
    return None


def metadata(core: CoreInput, entry: dict[str, str] | None) -> dict[str, str]:
    """The crash's record as systemd-coredump keeps it; {} for a core it did not store."""
    found: dict[str, str] = {}
    sources = []
    if core.xattrs:
        sources.append("xattr")
        for key, name in FROM_XATTR.items():
            if core.xattrs.get(name):
                found[key] = core.xattrs[name]
    if entry:
        sources.append("journal")
        for key, field in FROM_JOURNAL.items():
            value = without_controls(entry.get(field) or "", MAX_CHARS).strip()
            if value and key not in found:
                found[key] = value
    if core.systemd is not None:
        sources.append("filename")
        named = {"boot_id": core.systemd.boot_id, "pid": str(core.systemd.pid), "uid": str(core.systemd.uid),
                 "comm": core.systemd.comm, "timestamp": str(core.systemd.usec)}  # fmt: skip
        for key, value in named.items():
            found.setdefault(key, value)
    if found.get("cgroup"):
        container = container_of(found["cgroup"])
        if container:
            found["container"] = container
    if found:
        found["source"] = "+".join(sources)
    return found


def fill_record(record: CoreRecord, found: dict[str, str]) -> None:
    """The crash's record into the core's, and what the journal knows better than the file:
    the host and the time of the crash when the attributes did not say."""
    record.coredump = dict(found)
    if "journal" not in found.get("source", ""):
        return
    if record.host_source in (None, "directory") and found.get("hostname"):
        record.host, record.host_source = found["hostname"], "journal"
    if record.timestamp_source == "mtime" and found.get("timestamp", "").isdigit():
        record.timestamp, record.timestamp_source = int(found["timestamp"]) / 1e6, "journal"
