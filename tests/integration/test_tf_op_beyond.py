"""The op of real TensorFlow 2.21 crashes whose faulting frames are not the op's: read from the
crashing thread's stack memory (coreanalyze.classify.beyond) - a caught exception's thrower below
the stack pointer, the callers of XLA's run-time compiled code, a dataset iterator's class, the
bottom of a stack that overflowed. The cores are tf_corpus/'s, made once per session.
"""

from __future__ import annotations

import re

import pytest
from support.clirun import crashed_thread

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def reports(tf_reports):
    """(case, report, seconds) of the session's one plain analysis of each core."""
    return tf_reports


def test_exception_caught_without_the_gil_names_thrower_type_catcher(reports):
    _case, report, _seconds = reports("caught_exception_no_gil")
    c = report["classification"]
    # The exception object is the thread's caught exception: a dependent one, rethrown by
    # pybind11's translators, whose primary holds the type.
    assert c["detail"] == "std::bad_alloc", c
    summary = c["summary"]
    assert "std::bad_alloc" in summary
    assert re.search(r"thrown by std::vector::_M_fill_insert \(libtensorflow_cc\.so\.2\) in op TensorListSetItem", summary), summary
    assert "caught by pybind11's exception handler (pybind11::cpp_function::dispatcher in _pywrap_tfe.so)" in summary, summary
    assert "without holding the GIL" in summary
    evidence = "\n".join(c["evidence"])
    assert re.search(r"thrown by: .* bytes below the stack pointer", evidence), evidence
    # The kernel object is found from the dead frames too: the node and its inputs.
    instance = c["op_instance"]
    assert instance["op"] == "TensorListSetItem", instance
    assert [i["dtype"] for i in instance["inputs"]] == ["variant", "int32", "float32"], instance


def test_xla_jit_code_is_named_not_a_corrupt_jump(reports):
    _case, report, _seconds = reports("xla_jit_segv")
    c = report["classification"]
    assert "function pointer" not in c["summary"] and "jump" not in c["summary"], c["summary"]
    assert "compiled at run time by XLA: custom-call of module __compute_module" in c["summary"], c["summary"]
    assert "registered with the debugger JIT interface" in c["summary"]
    assert any(e.startswith("JIT code: pc in anonymous executable memory") and "jit_code_entry" in e for e in c["evidence"]), c["evidence"]
    frames = crashed_thread(report)["frames"]
    assert frames[0]["function"] == "custom-call" and frames[0]["module"] is None
    # No made-up frames under it: the next native frame is XLA's runtime.
    assert frames[1]["kind"] == "python" or "xla::cpu::" in (frames[1]["function"] or ""), frames[:3]
    # The cluster: the XLA launch kernel's node is the tf.function's.
    instance = c["op_instance"]
    assert instance is not None and re.fullmatch(r"__inference_sliced_\d+", instance["node"]), instance
    assert [(i["dtype"], i["shape"]) for i in instance["inputs"]] == [("float32", [4, 3])], instance


def test_dataset_op_named_from_the_iterator_class(reports):
    _case, report, _seconds = reports("dataset_bad_alloc")
    c = report["classification"]
    assert c["detail"] == "std::bad_alloc"
    assert "tf.data dataset op FixedLengthRecordDataset (data::FixedLengthRecordDatasetOp::Dataset::UncompressedIterator::GetNextInternal)" in c["summary"], c["summary"]


def test_deep_recursion_names_the_op_at_the_bottom(reports, record_property):
    _case, report, seconds = reports("deep_recursion_overflow")
    record_property("deep_recursion_seconds", round(seconds, 2))  # measured; no assert on time
    c = report["classification"]
    frames = [f for f in crashed_thread(report)["frames"] if f["kind"] == "native"]
    assert len(frames) == 256  # the unwinding stops there; the bottom is read from memory
    assert "The recursion started in op SerializeTensorOp (SerializeTensorOp::Compute (libtensorflow_cc.so.2))" in c["summary"], c["summary"]
    assert any(e.startswith("op at the bottom of the stack: SerializeTensorOp") for e in c["evidence"]), c["evidence"]
    assert any("is in the guard area" in e or "the stack pointer" in e for e in c["evidence"]), c["evidence"]
    instance = c["op_instance"]
    assert instance is not None and instance["op"] == "SerializeTensor", instance
