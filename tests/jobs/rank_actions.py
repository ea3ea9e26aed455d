"""What the job programs of this folder do as a rank: crash in native code, or fork a worker that
keeps the rank's connections open after it dies. Imported by them from their own folder."""

import ctypes
import os
import time
import warnings


def data_worker() -> None:
    """A forked data-loading worker stuck in its I/O: it holds the rank's sockets until the
    test ends it (or its time is up). Its pid is left in `helper` in the working directory."""
    warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)  # the child only sleeps
    pid = os.fork()
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    with open("helper", "w") as f:
        f.write(str(pid))


def crash() -> None:
    ctypes.string_at(0)  # SIGSEGV in the rank's own code
