"""An apport `.crash` file (Ubuntu's crash report) read as a container of a core.

The format is the one apport's `problem_report` module writes and reads (ProblemReport.write,
ProblemReport.load): RFC 822-style `Key: value` lines; a value of several lines continues on
lines that start with one space; a binary value is `Key: base64` followed by lines of one space
and base64, each line one chunk of a compressed stream encoded on its own. The stream is
gzip-framed deflate (apport's writer), a bare zlib stream (older apport) or zstd (a core apport
took over from systemd-coredump already compressed). apport writes the text fields first, then
the binary ones (`CoreDump` among them), but nothing here relies on that order.

Everything in the file is untrusted: the fields are read with bounds on line and value sizes,
they are only ever read (never used to choose where to write), and the CoreDump is decompressed
as a stream, one line at a time, so memory stays bounded whatever the core's size.
"""

from __future__ import annotations

import base64
import os
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from coreanalyze.base import zstd
from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import Report
from coreanalyze.base.safenames import without_controls

# apport's writer puts ProblemType first (ProblemReport._get_sorted_keys); a file that starts
# otherwise is not one of its reports.
MAGIC = b"ProblemType:"
CORE_FIELD = "CoreDump"
# The text fields read (CrashFields.program, .pid and .fill use them; docs/locating-cores.md).
WANTED = ("ExecutablePath", "ProcCmdline", "ProcMaps", "ProcStatus", "Signal", "Date", "ProcCwd", "Package", "InterpreterPath")
# A base64 line holds one compressed chunk of at most 128 KiB input (apport's CHUNK_SIZE):
# about 175 KiB of text. Longer lines are not apport's.
MAX_LINE = 4 << 20
MAX_VALUE = 4 << 20  # ProcMaps of a big process is a few hundred KiB
MAX_FIELDS = 10_000

GZIP_START = b"\x1f\x8b\x08"
ZSTD_START = b"\x28\xb5\x2f\xfd"


def no_core(name: str) -> BadInput:
    return BadInput(
        f"{name}: no CoreDump field: apport left the core out (it often does); "
        f"`coreanalyze triage {name}` reads its Stacktrace text"
    )


@dataclass
class CrashFields:
    """What a .crash file says beside its core."""

    fields: dict[str, str] = field(default_factory=dict)  # the WANTED text fields present
    has_core: bool = False  # a CoreDump field is there

    @property
    def program(self) -> str | None:
        """The program that dumped the core, as a default for --python/--exe: apport's
        InterpreterPath for a script (its ExecutablePath is then the script), else its
        ExecutablePath; only when that is an ELF file here (it is only ever read)."""
        for key in ("InterpreterPath", "ExecutablePath"):
            path = self.fields.get(key)
            if path and os.path.isabs(path) and _is_elf(path):
                return path
        return None

    @property
    def pid(self) -> int | None:
        """The crashed process's pid, from ProcStatus's `Pid:` line."""
        for line in self.fields.get("ProcStatus", "").splitlines():
            key, _, value = line.partition(":")
            if key == "Pid" and value.strip().isdigit():
                return int(value.strip())
        return None

    def fill(self, report: Report) -> None:
        """What the report lacks and the file says: the command line (ProcCmdline holds all of
        it, where the core's notes keep 80 characters)."""
        cmdline = self.fields.get("ProcCmdline")
        if report.core is not None and cmdline and not report.core.cmdline:
            report.core.cmdline = cmdline


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return os.path.isfile(path) and f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _lines(src: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """The file's lines without their newline, and whether each was cut at MAX_LINE (the rest
    of a cut line is skipped, so one hostile line cannot fill memory)."""
    while True:
        line = src.readline(MAX_LINE)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1], False
            continue
        cut = len(line) >= MAX_LINE
        while cut:
            rest = src.readline(MAX_LINE)
            if not rest or rest.endswith(b"\n"):
                break
        yield line, cut


def _key_of(line: bytes) -> tuple[str, bytes] | None:
    """(key, the rest of the line) for a field's first line; None for anything else."""
    key, sep, rest = line.partition(b":")
    if not sep or not key or key.startswith(b" "):
        return None
    try:
        return key.decode("ascii"), rest
    except UnicodeDecodeError:
        return None


def read_fields(src: BinaryIO, name: str, wanted: tuple[str, ...] = WANTED) -> CrashFields:
    """The wanted text fields of the .crash file open as `src` (binary values are skipped, not
    decoded); BadInput when it is not a problem report at all."""
    found = CrashFields()
    key: str | None = None
    value: list[bytes] = []
    size = count = 0

    def close() -> None:
        if key in wanted and key not in found.fields:
            text = b"\n".join(value).decode("utf-8", errors="replace")
            found.fields[key] = _clean_lines(text)

    for line, _cut in _lines(src):
        if line.startswith(b" "):
            if key in wanted and size < MAX_VALUE:
                value.append(line[1:])
                size += len(line)
            continue
        if not line:
            continue
        parsed = _key_of(line)
        if parsed is None:
            raise BadInput(f"{name}: not an apport crash report: a line that is neither a field nor its continuation")
        close()
        count += 1
        if count > MAX_FIELDS:
            raise BadInput(f"{name}: not an apport crash report: more than {MAX_FIELDS} fields")
        key, rest = parsed
        value, size = [], 0
        if rest.strip() == b"base64":
            found.has_core = found.has_core or key == CORE_FIELD
            key = None  # a binary value: skipped, never decoded here
            continue
        if rest.strip():
            value.append(rest.strip())
            size = len(rest)
    close()
    return found


def _clean_lines(text: str) -> str:
    """Control characters out of every line of a multi-line value, the lines kept."""
    return "\n".join(without_controls(line, MAX_LINE) for line in text[:MAX_VALUE].split("\n"))


def read_crash_fields(path: str) -> CrashFields:
    """The fields of the .crash file at `path`; BadInput when it holds no core (nothing to
    analyze: one line that says where its text can go instead)."""
    try:
        with open(path, "rb") as src:
            found = read_fields(src, _name(path))
    except OSError as e:
        raise BadInput(f"{_name(path)}: cannot read: {e.strerror or e}") from None
    if not found.has_core:
        raise no_core(_name(path))
    return found


def _name(path: str) -> str:
    return os.path.basename(path)


# ------------------------------------------------------------------------------ the CoreDump


class _Decoder:
    """The compressed stream's decoder, chosen by its first bytes as apport's reader does."""

    def __init__(self, first: bytes):
        self.zstd = first.startswith(ZSTD_START)
        if self.zstd:
            self._obj = zstd.frame_decoder()
        elif first.startswith(GZIP_START):
            self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            self._obj = zlib.decompressobj()  # older apport: a bare zlib stream

    def decompress(self, data: bytes) -> bytes:
        return self._obj.decompress(data)

    @property
    def eof(self) -> bool:
        return bool(self._obj.eof)

    @property
    def unused_data(self) -> bytes:
        return self._obj.unused_data


class CoreDumpReader:
    """The decompressed bytes of a .crash file's CoreDump field, as a file object's read(),
    one base64 line at a time (each line decodes on its own). Raises BadInput for a file with no
    CoreDump, and EOFError, ValueError (binascii.Error among them) or zlib's and zstd's errors for
    a damaged one (coreanalyze.corefile.compressed turns those into one line)."""

    # Compressed bytes fed per call: bounds what one call may expand to.
    FEED = 4096

    def __init__(self, src: BinaryIO, name: str):
        self._name = name
        self._lines = self._core_lines(src)
        self._decoder: _Decoder | None = None
        self._pending = b""

    def _core_lines(self, src: BinaryIO) -> Iterator[bytes]:
        in_core = False
        for line, cut in _lines(src):
            if line.startswith(b" "):
                if in_core:
                    if cut:
                        raise ValueError("a CoreDump line longer than apport writes")
                    yield line[1:]
                continue
            if in_core:
                return  # the next field: the CoreDump ended
            parsed = _key_of(line) if line else None
            if parsed is not None and parsed[0] == CORE_FIELD:
                if parsed[1].strip() != b"base64":
                    raise ValueError("the CoreDump field is not base64")
                in_core = True
        if not in_core:
            raise no_core(self._name)

    def read(self, _size: int = -1) -> bytes:
        while True:
            if not self._pending:
                line = next(self._lines, None)
                if line is None:
                    if self._decoder is None:
                        raise EOFError("the CoreDump field is empty")
                    if not self._decoder.eof:
                        raise EOFError("the CoreDump field ends before its compressed stream does")
                    return b""
                self._pending = base64.b64decode(line, validate=True)
                if self._decoder is None:
                    self._decoder = _Decoder(self._pending)
            if self._decoder.eof:
                # Bytes after the end of the stream: apport never writes them.
                raise ValueError("bytes after the end of the CoreDump's compressed stream")
            data, self._pending = self._pending[: self.FEED], self._pending[self.FEED :]
            out = self._decoder.decompress(data)
            if self._decoder.eof and (self._decoder.unused_data or self._pending):
                raise ValueError("bytes after the end of the CoreDump's compressed stream")
            if out:
                return out
