"""systemd-coredump's journal entries: the journal export format (`journalctl -o export`, what
`systemd-journal-remote` receives), `journalctl -o json` lines, and journalctl itself.

An entry is a dict of field -> text. Only coredump entries (MESSAGE_ID COREDUMP_MESSAGE_ID) are
kept, and only the fields `coredump.py` reads, each bounded: the journal is another program's
output and the entry's fields (COREDUMP_ENVIRON, COREDUMP_PROC_MAPS, the core itself when
storage is journal) can be large.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Iterator

COREDUMP_MESSAGE_ID = "fc2e22bc6ee647b6b90729ab34a250b1"
FIELDS = frozenset({
    "MESSAGE_ID", "COREDUMP_FILENAME", "COREDUMP_PID", "COREDUMP_UID", "COREDUMP_SIGNAL", "COREDUMP_TIMESTAMP",
    "COREDUMP_COMM", "COREDUMP_EXE", "COREDUMP_CMDLINE", "COREDUMP_UNIT", "COREDUMP_USER_UNIT", "COREDUMP_SLICE",
    "COREDUMP_CGROUP", "COREDUMP_HOSTNAME", "COREDUMP_CONTAINER_CMDLINE", "_BOOT_ID", "_HOSTNAME",
})  # fmt: skip
MAX_VALUE_CHARS = 4096
MAX_FILE_BYTES = 512 << 20
MAX_ENTRIES = 100_000
JOURNALCTL_SECONDS = 20.0


def _text(raw: bytes) -> str:
    return raw[:MAX_VALUE_CHARS].decode("utf-8", errors="replace")


def parse_export(data: bytes) -> Iterator[dict[str, str]]:
    """Entries of the journal export format: `FIELD=value` lines, or a field name line followed
    by a little-endian 64-bit size, the bytes and a newline; a blank line ends an entry."""
    entry: dict[str, str] = {}
    pos, end = 0, len(data)
    while pos < end:
        newline = data.find(b"\n", pos)
        if newline < 0:
            newline = end
        line = data[pos:newline]
        pos = newline + 1
        if not line:
            if entry:
                yield entry
                entry = {}
            continue
        name, eq, value = line.partition(b"=")
        if not eq:  # binary-safe field: size and bytes follow
            if pos + 8 > end:
                break
            size = int.from_bytes(data[pos:pos + 8], "little")
            value = data[pos + 8:pos + 8 + size]
            pos = pos + 8 + size + 1
        key = name.decode("ascii", errors="replace")
        if key in FIELDS:
            entry[key] = _text(value)
    if entry:
        yield entry


def _json_value(value: Any) -> str | None:
    if isinstance(value, str):
        return value[:MAX_VALUE_CHARS]
    if isinstance(value, list) and value and all(isinstance(b, int) and 0 <= b < 256 for b in value):
        return _text(bytes(value))  # a value that is not valid UTF-8 comes as its bytes
    if isinstance(value, list) and value:  # a field given several times: the first
        return _json_value(value[0])
    return None


def parse_json_lines(data: bytes) -> Iterator[dict[str, str]]:
    for line in data.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict):
            entry = {k: v for k, v in ((k, _json_value(v)) for k, v in raw.items() if k in FIELDS) if v is not None}
            if entry:
                yield entry


def coredump_entries(data: bytes) -> list[dict[str, str]]:
    """The coredump entries of a journal dump in either format."""
    parse = parse_json_lines if data.lstrip()[:1] == b"{" else parse_export
    found = []
    for entry in parse(data):
        if entry.get("MESSAGE_ID") == COREDUMP_MESSAGE_ID:
            found.append(entry)
            if len(found) >= MAX_ENTRIES:
                break
    return found


class JournalFile:
    """A journal dump in a file (exported on this machine or received from another), read again
    whenever it changes: a file that `journalctl -f -o export` or a collector appends to."""

    def __init__(self, path: str):
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self.entries: list[dict[str, str]] = []

    def current(self) -> list[dict[str, str]]:
        try:
            st = os.stat(self.path)
        except OSError:
            return self.entries
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp != self._stamp and st.st_size <= MAX_FILE_BYTES:
            try:
                with open(self.path, "rb") as f:
                    self.entries = coredump_entries(f.read())
                self._stamp = stamp
            except OSError:
                pass
        return self.entries


def from_journalctl(core_path: str) -> list[dict[str, str]]:
    """The journal's coredump entry of this file, asked of journalctl (a machine whose systemd
    journal holds it); [] when there is no journalctl or it has nothing."""
    journalctl = shutil.which("journalctl")
    if journalctl is None:
        return []
    try:
        run = subprocess.run(
            [journalctl, "--no-pager", "-o", "export", f"MESSAGE_ID={COREDUMP_MESSAGE_ID}", f"COREDUMP_FILENAME={core_path}"],
            capture_output=True, timeout=JOURNALCTL_SECONDS, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    return coredump_entries(run.stdout[:MAX_FILE_BYTES]) if run.returncode == 0 else []


def entry_for(entries: list[dict[str, str]], path: str, pid: int | None, usec: int | None) -> dict[str, str] | None:
    """The entry of the core at `path`: by its file name (the directory may be mounted elsewhere
    here), else by the crashed process's pid and systemd's timestamp of the crash."""
    name = os.path.basename(path)
    for entry in reversed(entries):  # the latest first: a file name reused after a vacuum
        if os.path.basename(entry.get("COREDUMP_FILENAME", "")) == name:
            return entry
    if pid is None or usec is None:
        return None
    for entry in reversed(entries):
        if entry.get("COREDUMP_PID") == str(pid) and entry.get("COREDUMP_TIMESTAMP") == str(usec):
            return entry
    return None
