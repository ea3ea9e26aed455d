"""A rank that sets its launcher's variables itself with os.environ (which calls setenv), as
training scripts that build them from their own flags do, then faults in native code. CPython
refers to libc's `environ` itself: the interpreter's copy of it is the live one.

    environ_crash.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_actions import crash  # noqa: E402

os.environ["PYTEST_CURRENT_TEST"] = "tests/test_model.py::test_forward (call)"
os.environ.update(RANK="2", WORLD_SIZE="3", MASTER_ADDR="10.0.0.9", MASTER_PORT="29400")
del os.environ["DROPPED"]
crash()
