"""Arms the crash guard from inside (argv[1]: the reports' directory), then, by argv[2]:
  crash   a worker thread reads address 0x30 through ctypes;
  wait    waits until the file argv[3] exists, then exits 0 (the test kills the helper first);
  child   starts a fresh interpreter that crashes, then exits 0 (COREANALYZE_GUARD arms it)."""

import ctypes
import os
import subprocess
import sys
import threading
import time

from coreanalyze.capture import guard

armed = guard.arm(sys.argv[1]) if sys.argv[1] != "-" else None
print(f"armed: {armed}", flush=True)
what = sys.argv[2]
if what == "crash":
    worker = threading.Thread(target=lambda: ctypes.string_at(0x30), name="loader")  # GUARDED-CRASH
    worker.start()
    worker.join()
elif what == "wait":
    while not os.path.exists(sys.argv[3]):
        time.sleep(0.05)
    print("finished", flush=True)
elif what == "child":
    code = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0x38)"]).returncode
    print(f"child ended: {code}", flush=True)
