"""The TensorFlow and Python versions a pasted text states (coreanalyze/triage/versions.py), and
what they decide: a known crash from TensorFlow's advisories says which fix this build lacks, and
a build that has it is not told (issue 46's "TFSA-2022-NNN, fixed in 2.10.1; this process ran
2.9.0" for a text, not only a core)."""

from __future__ import annotations

import pytest

from coreanalyze.known import load_known
from coreanalyze.known.onreport import recognize
from coreanalyze.triage import triage_text
from coreanalyze.triage.versions import stated_versions


@pytest.mark.parametrize(
    "text, expected",
    [
        ("### TensorFlow version\n\n2.9.1\n\n### Python version\n\n3.10\n", {"tensorflow_version": "2.9.1", "python_version": "3.10"}),
        ("TensorFlow version: 2.10.0\nPython version: 3.9.16", {"tensorflow_version": "2.10.0", "python_version": "3.9.16"}),
        ("$ pip install tensorflow-cpu==2.11.0", {"tensorflow_version": "2.11.0"}),
        ("tensorflow-gpu          2.4.0\nnumpy                   1.19.5", {"tensorflow_version": "2.4.0"}),
        (">>> tf.__version__\n'2.15.0'", {"tensorflow_version": "2.15.0"}),
        ("  File \"/usr/lib/python3/site-packages/tensorflow-2.8.4.dist-info/METADATA\"", {"tensorflow_version": "2.8.4"}),
        ("Collecting tensorflow_cpu-2.10.0-cp39-cp39-manylinux2014_x86_64.whl", {"tensorflow_version": "2.10.0"}),
        ("Python 3.8.10 (default, Nov 14 2022, 12:59:47)", {"python_version": "3.8.10"}),
    ],
)
def test_the_forms_templates_pip_and_the_interpreter_print(text, expected):
    assert stated_versions(text.splitlines()) == expected


@pytest.mark.parametrize(
    "text",
    [
        "TensorFlow 2 crashes when the model is saved",
        "tensorflow/core/kernels/conv_ops.cc:1234] Check failed",
        "### TensorFlow version\n\nnightly, built from source",
        "tensorflow==2.9.1.1.2.3 looks odd",
        "numpy 1.24.3",
    ],
)
def test_what_states_no_version(text):
    assert "tensorflow_version" not in stated_versions(text.splitlines())


RESIZE_CHECK = """\
### TensorFlow version

{version}

### Standalone code to reproduce the issue

tf.raw_ops.TensorListResize(input_handle=h, size=[1, 2])

### Relevant log output

2022-09-20 10:00:00.000000: F tensorflow/core/framework/tensor.cc:733] Check failed: 1 == NumElements() (1 vs. 2)Must have a one element tensor
Aborted (core dumped)
(gdb) bt
#0  0x00007ffff7e1e9fc in __pthread_kill_implementation () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffe51a1b2a in tensorflow::internal::LogMessageFatal::~LogMessageFatal() () from /usr/local/lib/python3.9/site-packages/tensorflow/libtensorflow_framework.so.2
#2  0x00007fffe4e0a1b1 in tensorflow::Tensor::CheckIsAlignedAndSingleElement() const [clone .cold] () from /usr/local/lib/python3.9/site-packages/tensorflow/libtensorflow_framework.so.2
#3  0x00007fffe9a7e2c0 in tensorflow::TensorListResize::Compute(tensorflow::OpKernelContext*) () from /usr/local/lib/python3.9/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#4  0x00007fffe51f2d33 in tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*) () from /usr/local/lib/python3.9/site-packages/tensorflow/libtensorflow_framework.so.2
"""


def known_of(version: str):
    report = triage_text(RESIZE_CHECK.format(version=version), "issue.md")
    recognize(report, load_known())
    return report


def test_a_text_from_an_older_release_is_told_the_fix_it_lacks():
    report = known_of("2.9.1")
    assert report.environment["tensorflow_version"] == "2.9.1"
    known = report.classification.known
    assert known["id"] == "TFSA-2022-155"
    assert known["note"] == "TFSA-2022-155, fixed in 2.9.3; this process ran 2.9.1"


def test_a_text_from_a_patched_release_is_not_told():
    assert known_of("2.10.1").classification.known is None
