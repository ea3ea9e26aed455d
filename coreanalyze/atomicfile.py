"""The one way files are written: whole or not at all.

A reader (or a rerun after SIGKILL) sees the old file or the new one, never a part. The data
goes to a temporary file created exclusively beside the target (so a file or symlink planted
at a predictable name in a shared directory is never written through), with the permissions a
plain open() would give, and is renamed over the target. Temporary names start with "." and
hold TMP_MARK, so a directory's leftovers from a killed run can be recognised and removed.
"""

from __future__ import annotations

import os
import tempfile

TMP_MARK = ".tmp-"


def write_atomically(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = False) -> None:
    """Replace path with data (str is written as UTF-8); durable: on disk before the rename."""
    path = os.fspath(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}{TMP_MARK}")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
