"""The environment as the process had it when it died, not only as it started.

The kernel puts the environment a process starts with on its initial stack (read with the
command line: coreanalyze.corefile.cmdline). What the process changed later is elsewhere: libc's
`environ` (also `__environ`) points to the array getenv reads, and setenv/putenv (which every
`os.environ[NAME] = value` calls) copy that array to the heap on their first change and keep it
there. A training script that builds TF_CONFIG from its flags, or pytest's PYTEST_CURRENT_TEST,
is only in that array.

Where `environ` lives: a program that refers to it (CPython does) gets its own copy by a copy
relocation, and libc then uses that copy too; else it is libc's own. So the executable's (and
libpython's) symbol comes first, as the dynamic loader resolves it, then libc's.
Every value is untrusted: bounded counts and lengths, printable text.
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any, Iterator

from coreanalyze.corefile.tables import MAX_ARG_BYTES, MAX_ARGV_TOTAL_BYTES, MAX_ENVIRON, printable_text

# The Process (coreanalyze.process.process) calls this module for its current_environment: named
# here only in words, so that the two modules make no import cycle.
Process = Any

ENVIRON_SYMBOLS = ("__environ", "environ")
CHUNK_WORDS = 512
# libc.so.6 (glibc), libc-2.31.so (older glibc), libc.musl-x86_64.so.1 / ld-musl-*.so.1 (musl).
_LIBC = re.compile(r"^(libc\.so\.\d+|libc-[\d.]+\.so|libc\.musl-[\w-]+\.so\.\d+|ld-musl-[\w-]+\.so\.\d+)$")


def current_environment(process: Process) -> dict[str, str] | None:
    """NAME -> value from the array libc's `environ` pointed to when the process died (the first
    of a repeated name wins, as getenv's); None where the core does not tell (no symbol for
    `environ`, or its array is not in the core)."""
    try:
        return _read(process)
    except (OSError, ValueError, struct.error):  # a broken core or library: the initial block stands
        return None


def _read(process: Process) -> dict[str, str] | None:
    for address in _environ_addresses(process):
        array = process.read_u64(address)
        if array is None:
            continue
        if array == 0:  # clearenv(): no variables at all
            return {}
        found = _read_array(process, array)
        if found is not None:
            return found
    return None


def _environ_addresses(process: Process) -> Iterator[int]:
    """Where `environ` may live, in the order the dynamic loader binds it; libc's symbols are
    read only where the interpreter's files do not define it."""
    for name in ENVIRON_SYMBOLS:
        address = process.symbol_address(name)
        if address is not None:
            yield address
    libc = _libc_environ(process)
    if libc is not None:
        yield libc


def _libc_environ(process: Process) -> int | None:
    """libc's own `__environ`, from its dynamic symbols (exported: every libc has them)."""
    from coreanalyze.symbols.bias import load_bias
    from coreanalyze.symbols.process import read_symbols

    for module in process.modules:
        local = getattr(module, "local_path", None)
        if not local or not _LIBC.match(os.path.basename(module.path)) or not _trusted(module):
            continue
        symbols = read_symbols(local, ".dynsym")
        value = next((symbols[n] for n in ENVIRON_SYMBOLS if n in symbols), None)
        bias = load_bias(module, process.notes, [local]) if value is not None else None
        if bias is not None:
            return bias + value
    return None


def _trusted(module: object) -> bool:
    status = getattr(module, "status", None)
    trusted = getattr(status, "trusted_image", None)
    return bool(trusted) if trusted is not None else status in ("ok", "no-build-id")


def _read_array(process: Process, array: int) -> dict[str, str] | None:
    """The NAME=value strings of a NULL-ended array of pointers; None when the array is not in
    the core or holds no such string (not an environment)."""
    fmt = ("<" if process.little_endian else ">") + "Q"
    environ: dict[str, str] = {}
    total = 0
    for pointer in _pointers(process, array, fmt):
        if pointer == 0:
            return environ
        text = process.read_cstring(pointer, MAX_ARG_BYTES)
        if text is None:
            continue
        total += len(text)
        if total > MAX_ARGV_TOTAL_BYTES:
            break
        name, sep, value = printable_text(text).partition("=")
        if sep and name:
            environ.setdefault(name, value)
    # No NULL within MAX_ENVIRON pointers (or the bytes ran out): what was read, if it is one.
    return environ or None


def _pointers(process: Process, array: int, fmt: str) -> Iterator[int]:
    """The array's words, read a page at a time: at most MAX_ENVIRON + 1, ending where the core does."""
    for first in range(0, MAX_ENVIRON + 1, CHUNK_WORDS):
        data = process.read_available(array + 8 * first, 8 * min(CHUNK_WORDS, MAX_ENVIRON + 1 - first))
        yield from (word for (word,) in struct.iter_unpack(fmt, data[: len(data) // 8 * 8]))
        if len(data) < 8 * CHUNK_WORDS:
            return


MAX_LOST_SCANNED = 4 << 30  # bytes of writable memory searched for a removed variable, at most
MAX_LOST_VALUES = 16


def removed_values(process: Process, name: str) -> list[str]:
    """Values a `NAME=value` string still holds in the process's writable memory: glibc's setenv
    makes each such string once and keeps it (unsetenv, `del os.environ[NAME]`, only takes its
    pointer out of the array), so a variable the process set and later removed is still there.
    Searched, not followed: the caller says when it is worth a pass over the heap, and which of
    the values found (several settings leave several) is one it can use."""
    from itertools import islice

    from coreanalyze.corefile.memory import find_in_writable, searching

    with searching():  # a shrunk core keeps what was found, not all that was looked through
        hits = list(islice(find_in_writable(process, name.encode() + b"=", MAX_LOST_SCANNED), MAX_LOST_VALUES))
    values: list[str] = []
    for at in hits:
        # The string's own start: the byte before it ends another string or a malloc header.
        text = process.read_cstring(at, MAX_ARG_BYTES)
        if text is not None:
            value = printable_text(text).partition("=")[2]
            if value and value not in values:
                values.append(value)
    return values
