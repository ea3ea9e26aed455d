"""The op instance (node, op type, device, inputs) read from real TensorFlow crash cores.

The expected values are what the crashing scripts in tf_corpus/ built: the tensors they feed,
the node names their graphs have. A kernel object overwritten on purpose gives no instance.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli
from support.opchecks import (
    CPU0,
    check_custom_op_segv,
    check_eager_check_failure,
    check_graph_check_failure,
    check_overwritten_kernel,
    check_reproducer,
    floats,
    tensors,
)

from coreanalyze.base.model import Frame, OpInput, OpInstance, Report, Thread, report_from_dict
from coreanalyze.corefile import read_core
from coreanalyze.opinstance import node_sentence
from coreanalyze.opinstance.layouts import all_layouts, dtypes, layouts_for
from coreanalyze.opinstance.tensorflow import kernel_frame

# ---------------------------------------------------------------------------------------------
# Data and pure parts


def test_layout_files_cover_the_fields_the_reader_uses():
    groups = {"op_kernel", "op_kernel_context", "params", "tensor_value", "tensor", "tensor_shape",
              "tensor_buffer", "device", "parsed_name", "string_view", "span", "std_string", "inlined_vector"}
    tensorflow = [lay for lay in all_layouts() if lay.framework == "tensorflow"]
    assert tensorflow
    for layout in tensorflow:
        assert layout.versions
        assert groups <= set(layout.fields), layout.name


def test_layouts_for_a_known_version_are_that_versions_only():
    tensorflow = [lay for lay in all_layouts() if lay.framework == "tensorflow"]
    known = tensorflow[0]
    chosen = layouts_for("tensorflow", known.versions[0] + ".1")
    assert [lay.name for lay in chosen] == [known.name]
    # An unknown version tries every layout (each must validate before it is used).
    assert len(layouts_for("tensorflow", "9.99.0")) == len(tensorflow)


def test_dtype_table_matches_tensorflow_numbering():
    table = dtypes()
    assert (table[1].name, table[1].size) == ("float32", 4)
    assert (table[3].name, table[9].name, table[10].name, table[19].name) == ("int32", "int64", "bool", "float16")
    assert table[7].size == 0  # strings have no fixed element size


@pytest.mark.parametrize(
    "function, kernel",
    [
        ("tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)",
         "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>"),
        ("(anonymous namespace)::ScatterToSlotsOp::Compute", "(anonymous namespace)::ScatterToSlotsOp"),
        ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", None),
        ("tensorflow::shape_inference::InferenceContext::Compute(int)", None),
    ],
)
def test_kernel_frame_is_an_op_kernels_compute(function, kernel):
    found = kernel_frame(Thread(tid=1, frames=[Frame(index=0, pc=0x1000, function=function)]))
    assert (found.kernel_class if found else None) == kernel


def test_op_instance_survives_the_json_round_trip():
    report = Report()
    report.classification.op_instance = OpInstance(
        "tensorflow", node="dense/MatMul", op="MatMul", device=CPU0,
        inputs=[OpInput("float32", [2, 3], [1.0] * 6), OpInput()],
    )
    again = report_from_dict(report.to_dict())
    assert again.classification.op_instance == report.classification.op_instance
    assert node_sentence(again.classification.op_instance) == (
        "In node `dense/MatMul` (MatMul, inputs float32[2,3] x (absent))."
    )


# ---------------------------------------------------------------------------------------------
# Real cores

pytestmark_tf = pytest.mark.tf


@pytest.fixture(scope="module")
def op_reports(tf_reports):
    def get(name: str) -> dict:
        return tf_reports(name)[1]

    return get


@pytest.mark.tf
def test_eager_check_failure_names_the_op_and_its_inputs(op_reports):
    check_eager_check_failure(op_reports("kernel_check_failure")["classification"])


@pytest.mark.tf
def test_graph_node_is_named_as_in_the_tf_function(op_reports):
    check_graph_check_failure(op_reports("graph_check_failure")["classification"])


@pytest.mark.tf
def test_custom_op_null_dereference_names_its_node(op_reports):
    check_custom_op_segv(op_reports("kernel_compute_segv")["classification"])


@pytest.mark.tf
def test_worker_thread_node_and_its_input_belong_together(op_reports):
    # Two ScatterToSlots nodes run in parallel: the one that crashed is named, and its input is
    # the one that node gets (features, or features * 2 for the second node).
    instance = op_reports("worker_thread_segv")["classification"]["op_instance"]
    assert instance["op"] == "ScatterToSlots"
    expected = {"ScatterToSlots": floats(16), "ScatterToSlots_1": floats(16, step=2.0)}
    assert instance["node"] in expected, instance["node"]
    assert tensors(instance["inputs"]) == [("float32", [16], expected[instance["node"]])]


@pytest.mark.tf
def test_overwritten_kernel_object_gives_no_instance(op_reports):
    check_overwritten_kernel(op_reports("kernel_overwritten")["classification"])


@pytest.mark.tf
def test_no_kernel_running_means_no_instance_and_no_complaint(op_reports):
    c = op_reports("numpy_interop")["classification"]
    assert c["op_instance"] is None and c["op_instance_unread"] is None


@pytest.mark.tf
def test_signature_keeps_shapes_and_values_out(op_reports):
    eager = op_reports("kernel_check_failure")["classification"]["signature"]
    assert not re.search(r"float32|\[1|LRNGrad`", eager), eager


@pytest.mark.tf
def test_markdown_html_and_text_show_the_op_instance(tf_cores, tmp_path):
    case = tf_cores.get("graph_check_failure")
    markdown = run_cli(str(case.core), "--python", str(case.exe), "--format", "markdown", "-o", "-")
    assert markdown.code == 0, markdown.stderr
    assert "**Op instance**" in markdown.stdout
    assert "`lrn_backward`" in markdown.stdout and "`float32[1,1,2,3]`" in markdown.stdout
    html_path = tmp_path / "report.html"
    html = run_cli(str(case.core), "--python", str(case.exe), "-o", str(html_path))
    assert html.code == 0, html.stderr
    page = html_path.read_text()
    assert '<section id="op-instance">' in page and "<code>lrn_backward</code>" in page
    text = run_cli(str(case.core), "--python", str(case.exe), "--format", "text", "-o", "-")
    assert "node lrn_backward  op LRNGrad" in text.stdout


# ---------------------------------------------------------------------------------------------
# The reproducer: run in a fresh process, it must crash with the same signature


@pytest.mark.tf
@pytest.mark.parametrize("name", ["kernel_check_failure", "graph_check_failure"])
def test_reproducer_crashes_with_the_same_signature(tf_cores, op_reports, tmp_path, name):
    check_reproducer(tf_cores.get(name), op_reports(name)["classification"], tmp_path)


@pytest.mark.tf
def test_graph_reproducer_carries_the_nodes_attributes(op_reports):
    snippet = op_reports("graph_check_failure")["classification"]["op_instance"]["reproducer"]
    for attribute in ("depth_radius=2,", "bias=1.5,", "alpha=0.25,", "beta=0.75,"):
        assert attribute in snippet, snippet
    assert "T=" not in snippet  # inferred from the inputs by tf.raw_ops


@pytest.mark.tf
def test_custom_op_gets_no_raw_op_reproducer(op_reports):
    assert op_reports("kernel_compute_segv")["classification"]["op_instance"]["reproducer"] is None


@pytest.mark.tf
def test_layout_data_is_what_the_installed_headers_say():
    # The stored layout of the installed TensorFlow's version is measured again from its
    # headers: the data is what the headers say, not offsets tuned to one core.
    from support.require import require
    from support.tfcores import require_tensorflow

    from coreanalyze.opinstance.layouts import major_minor
    from coreanalyze.opinstance.measure import measure

    python = require_tensorflow()
    version, measured = measure(str(python), require("g++"))
    stored = [lay for lay in all_layouts() if major_minor(version) in lay.versions]
    assert stored, f"no layout data for TensorFlow {version}: run python -m coreanalyze.opinstance.measure"
    assert stored[0].fields == measured


# ---------------------------------------------------------------------------------------------
# TFLite


@pytest.mark.tf
def test_tflite_node_index_op_andtensors(op_reports):
    # interpreter_invoke.py converts relu(x @ weights + 1.0) with x [1,8] and weights [8,4]: one
    # FULLY_CONNECTED node (weights stored transposed) fed ones, bias 1.0.
    c = op_reports("interpreter_invoke")["classification"]
    instance = c["op_instance"]
    assert instance is not None, c["evidence"]
    assert (instance["framework"], instance["op"], instance["node_index"], instance["version"]) == (
        "tflite", "FULLY_CONNECTED", 0, 1)
    assert instance["delegate"] is None  # BUILTIN_WITHOUT_DEFAULT_DELEGATES
    shapes = [(t["dtype"], t["shape"], t["allocation"]) for t in instance["inputs"]]
    assert shapes == [("float32", [1, 8], "arena-rw"), ("float32", [4, 8], "mmap-ro"), ("float32", [4], "mmap-ro")]
    assert instance["inputs"][0]["value"] == [1.0] * 8
    assert instance["inputs"][2]["value"] == [1.0] * 4
    for tensor in [*instance["inputs"], *instance["outputs"]]:
        assert tensor["bytes"] == tensor["needed_bytes"], tensor
        assert (tensor["scale"], tensor["zero_point"]) == (0.0, 0)  # a float model: not quantized
    assert [(t["dtype"], t["shape"]) for t in instance["outputs"]] == [("float32", [1, 4])]
    assert instance["outputs"][0]["value"] is None  # not computed when Eval faulted
    assert f"In node `{instance['node']}` (FULLY_CONNECTED, node index 0" in c["summary"]


@pytest.mark.tf
def test_tflite_node_delegated_to_xnnpack(op_reports):
    # The same model with the default delegate: XNNPACK replaces the FULLY_CONNECTED node by its
    # own kernel node (appended after the original one) that takes the model's tensors.
    c = op_reports("interpreter_invoke_xnnpack")["classification"]
    instance = c["op_instance"]
    assert instance is not None, c["evidence"]
    assert (instance["op"], instance["delegate"], instance["node_index"]) == ("TfLiteXNNPackDelegate", "XNNPACK", 1)
    assert [(t["dtype"], t["shape"], t["name"]) for t in instance["inputs"]] == [
        ("float32", [1, 8], "x"), ("float32", [4, 8], "MatMul"), ("float32", [4], "Relu;add")]
    assert [(t["dtype"], t["shape"]) for t in instance["outputs"]] == [("float32", [1, 4])]
    assert "delegate XNNPACK" in c["summary"]


@pytest.mark.tf
def test_tflite_model_loaded_from_a_file(tf_cores, tmp_path):
    """Interpreter(model_path=...): the model file is mapped read-only and left out of the core;
    the tensors' names and the weights are read from it while it is there and the same size,
    and without it the instance keeps everything else and says which names are missing."""
    case = tf_cores.get("interpreter_invoke_model_file")
    with read_core(case.core) as notes:
        (model,) = {m.path for m in notes.mappings if m.path.endswith("/dense.tflite")}
    model = Path(model)

    def instance() -> tuple[dict, list[str]]:
        c = analyze_json(case.core, "--python", str(case.exe), cwd=tmp_path)["classification"]
        assert c["op_instance"] is not None, c["evidence"]
        return c["op_instance"], c["evidence"]

    found, evidence = instance()
    assert (found["op"], found["node_index"]) == ("FULLY_CONNECTED", 0)
    assert [(t["dtype"], t["shape"], t["allocation"]) for t in found["inputs"]] == [
        ("float32", [1, 8], "arena-rw"), ("float32", [4, 8], "mmap-ro"), ("float32", [4], "mmap-ro")]
    assert [t["name"] for t in found["inputs"]] == ["x", "MatMul", "Relu;add"]  # from the model file
    assert found["inputs"][2]["value"] == [1.0] * 4  # the bias: a weight in the model file
    assert found["node"] == found["outputs"][0]["name"] and found["node"]
    assert found["missing"] == [] and found["read_from_files"] == {str(model): "size"}
    assert any(f"read from the mapped file {model}" in e for e in evidence)

    kept = tmp_path / "dense.tflite.kept"
    model.rename(kept)
    try:
        gone, evidence = instance()
        # The same node, op, shapes and in-core values; the names are reported missing, not guessed.
        assert (gone["op"], gone["node_index"]) == ("FULLY_CONNECTED", 0)
        assert [t["shape"] for t in gone["inputs"]] == [t["shape"] for t in found["inputs"]]
        assert gone["inputs"][0]["value"] == [1.0] * 8  # the input lives in the arena, in the core
        assert all(t["name"] is None for t in gone["inputs"] + gone["outputs"])
        assert gone["node"] == "#0"
        assert len(gone["missing"]) == len(gone["inputs"]) + len(gone["outputs"])
        assert all(f"is in the mapped file {model}, not in the core" in m and "is not here" in m for m in gone["missing"])
        assert any(e.startswith("op instance: not read: tensor 0's name") for e in evidence)

        # Another file at that path (a model being rewritten: empty) is not taken for it.
        model.write_bytes(b"")
        other, _ = instance()
        assert all(t["name"] is None for t in other["inputs"])
        assert all("does not fit the mapping" in m for m in other["missing"])
    finally:
        kept.replace(model)


def test_layouts_differ_between_tensorflow_versions():
    # The data is per version because the objects moved: 2.16's OpKernelContext, Params and
    # protobuf containers are not where 2.21's are.
    by_version = {lay.versions[0]: lay.fields for lay in all_layouts() if lay.framework == "tensorflow"}
    old, new = by_version["2.16"], by_version["2.21"]
    assert old["op_kernel_context"] != new["op_kernel_context"]
    assert old["params"]["inputs"] != new["params"]["inputs"]
    assert ("rep" in old["repeated_ptr"], "rep" in new["repeated_ptr"]) == (True, False)
    assert (old["proto_map"]["tree"], new["proto_map"]["tree"]) == ("paired", "tagged")
