"""A parent that lives on while two of its children die in native code: a forked
multiprocessing worker and a fresh interpreter started with subprocess. Exits 0."""

import ctypes
import multiprocessing
import subprocess
import sys


def read_null():
    ctypes.string_at(0x18)  # CHILD-CRASH


if __name__ == "__main__":
    worker = multiprocessing.get_context("fork").Process(target=read_null)
    worker.start()
    worker.join()
    fresh = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0x28)"])
    print(f"children ended: {worker.exitcode} {fresh.returncode}", flush=True)
