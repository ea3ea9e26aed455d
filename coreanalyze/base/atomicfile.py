"""The one way files are written: whole or not at all.

A reader (or a rerun after SIGKILL) sees the old file or the new one, never a part. The data
goes to a temporary file created exclusively beside the target (so a file or symlink planted
at a predictable name in a shared directory is never written through), with the permissions a
plain open() would give, and is renamed over the target. Temporary names start with "." and
hold TMP_MARK, so a directory's leftovers from a killed run can be recognised and removed.
"""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from typing import Iterator

TMP_MARK = ".tmp-"


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary name beside `path` for the block to create the new file under (exclusively:
    the name is random and new); renamed over `path` when the block ends, removed if it fails."""
    path = os.fspath(path)
    directory, name = os.path.split(path)
    tmp = os.path.join(directory or ".", f".{name}{TMP_MARK}{secrets.token_hex(6)}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomically(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = False) -> None:
    """Replace path with data (str is written as UTF-8); durable: on disk before the rename."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path) as tmp:
        # O_EXCL: never through a file or symlink planted at the name; 0o666 less the umask, as
        # a plain open() gives.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            if durable:
                f.flush()
                os.fsync(f.fileno())
