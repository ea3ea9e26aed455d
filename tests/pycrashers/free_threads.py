"""Worker threads wait in Python functions with locals of their own while the main thread faults
in native code (a read of address 0x10 through ctypes). Run by a free-threaded CPython (3.13t),
it runs without a GIL: nothing serializes the threads, and no thread holds a GIL at the fault.

Before the fault it writes known.json in its working directory: whether the GIL was enabled, and
per thread its native id and the reprs of its innermost function's locals, so that a test checks
a core against what the process itself knew.
"""
import ctypes
import json
import sys
import threading
import time

WORKERS = 3
ready = threading.Barrier(WORKERS + 1)
known = {"gil_enabled": sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True, "threads": {}}


def note(**values):
    """What a test will find among this frame's locals, as repr() gives it."""
    known["threads"][str(threading.get_native_id())] = {name: repr(value) for name, value in values.items()}


def hold_shard(index, rows):
    label = f"shard-{index}"
    offset = index * 1000
    checked = index % 2 == 0
    note(index=index, rows=rows, label=label, offset=offset, checked=checked)
    ready.wait()
    time.sleep(600)  # SHARD-LINE


def feed(index):
    hold_shard(index, rows=(index + 1) * 64)  # CALL-SHARD


def crash_now(reason):
    code = 7
    note(reason=reason, code=code)
    ready.wait()
    time.sleep(0.3)  # let the workers settle into their sleep
    with open("known.json", "w") as out:
        json.dump(known, out)
    return ctypes.string_at(0x10, 8)  # CRASH-LINE


def main():
    for i in range(WORKERS):
        threading.Thread(target=feed, args=(i,), name=f"feeder-{i}", daemon=True).start()
    crash_now("no GIL")  # CALL-CRASH


if __name__ == "__main__":
    sys.exit(main())  # CALL-MAIN
