"""Where the tests' inputs live; everything else names them through here."""

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
CRASHERS = TESTS / "crashers"  # C programs that crash on purpose
PYCRASHERS = TESTS / "pycrashers"  # Python scripts that crash through ctypes
HANGS = TESTS / "hangs"  # programs that hang (deadlocks, GIL cycles)
TF_CORPUS = TESTS / "tf_corpus"  # TensorFlow crash scenarios
JOBS = TESTS / "jobs"  # multi-process jobs (TensorFlow workers, torchrun ranks) whose ranks crash or wait
DATA = TESTS / "data"  # crash texts: traces/, triage/, peer/
OLDER_TENSORFLOW = TESTS / "older_tensorflow.txt"

# Data kept beside the repository (not in it): real GPU crash data whose files are NVIDIA's.
# COREANALYZE_SHARED_DATA points elsewhere when the clone does not sit beside it.
SHARED_DATA = Path(os.environ.get("COREANALYZE_SHARED_DATA") or REPO.parent / "shared" / "data")
GPU_DATA = SHARED_DATA / "gpu"
