"""A Python frame's file is read through TensorFlow's name index (layout.py) as a native frame's
source file is: in a faulthandler dump, the only frames there are, TensorFlow's add-on packages
and the directories the Python rules do not name still say which subsystem was running."""

from __future__ import annotations

import pytest

from coreanalyze.triage import triage_text

DUMP = """\
Fatal Python error: Segmentation fault

Current thread 0x00007f3c2a1b2740 (most recent call first):
  File "{path}", line 60 in {function}
  File "/home/u/train.py", line 40 in main
  File "/home/u/train.py", line 55 in <module>
Segmentation fault (core dumped)
"""


@pytest.mark.parametrize(
    "path, function, category",
    [
        ("/usr/local/lib/python3.10/dist-packages/tensorflow_io/python/ops/core_ops.py", "io_read", "kernel-compute"),
        ("/usr/local/lib/python3.10/dist-packages/tensorflow/python/framework/load_library.py", "load_op_library", "library-load"),
        ("/opt/conda/lib/python3.9/site-packages/tensorflow/python/distribute/cross_device_ops.py", "reduce", "tf-runtime"),
        # The Python rules that name a subsystem's entry points still decide theirs.
        ("/usr/local/lib/python3.10/dist-packages/tensorflow/python/data/ops/iterator_ops.py", "__next__", "tf-data"),
        ("/usr/lib/python3/dist-packages/tflite_runtime/interpreter.py", "invoke", "interpreter-invoke"),
    ],
)
def test_the_innermost_python_frames_file_places_the_crash(path, function, category):
    c = triage_text(DUMP.format(path=path, function=function), "dump.txt").classification
    assert (c.category, c.fault_kind) == (category, "invalid-access"), c.evidence


def test_a_scripts_own_file_places_nothing():
    c = triage_text(DUMP.format(path="/home/u/model.py", function="forward"), "dump.txt").classification
    assert c.category == "unknown", c.evidence
