"""Where the tests' inputs live; everything else names them through here."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
CRASHERS = TESTS / "crashers"  # C programs that crash on purpose
PYCRASHERS = TESTS / "pycrashers"  # Python scripts that crash through ctypes
HANGS = TESTS / "hangs"  # programs that hang (deadlocks, GIL cycles)
TF_CORPUS = TESTS / "tf_corpus"  # TensorFlow crash scenarios
DATA = TESTS / "data"  # crash texts: traces/, triage/, peer/
OLDER_TENSORFLOW = TESTS / "older_tensorflow.txt"
