"""The name index of TensorFlow's layout (coreanalyze/classify/layout/): the committed index is
what its recorded inputs make, the recorded inputs are the installed wheel's, and the classifier
reads names through it (real lines of public reports)."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import sys

import pytest

from coreanalyze.classify import layout, layoutgen
from coreanalyze.triage.parse import triage_text


def test_the_committed_index_is_what_its_recorded_inputs_make():
    with gzip.open(layout.INDEX_FILE, "rb") as f:
        committed = f.read()
    built = layoutgen.encoded(layoutgen.build(layoutgen.load_inputs()))
    # Compared by digest: a difference is reported as one line, not diffed over megabytes.
    assert hashlib.sha256(built).hexdigest() == hashlib.sha256(committed).hexdigest(), "run python -m coreanalyze.classify.layoutgen --build-only"


def test_every_directory_of_tensorflows_tree_has_a_subsystem():
    """The prefix table covers the tree: no directory of TensorFlow, XLA, TSL or LiteRT the index
    holds is left without a category (a new top folder needs a row)."""
    roots = ("tensorflow/", "xla/", "tsl/", "tflite/", "litert/")
    uncovered = [d for d in layout.index()["dirs"] if d.startswith(roots) and layout.category_of_path(d + "/") is None]
    assert uncovered == []


@pytest.mark.parametrize(
    ("ref", "category"),
    [
        ("fusion_emitter.cc", "xla"),  # absl logging names only the basename (TF 2.16+)
        ("cuda_driver.cc", "gpu-driver"),  # a GPU file the CPU wheel lacks: from the source trees' listings
        ("gpu_event_mgr.cc", "gpu-driver"),
        ("cupti_tracer.cc", "gpu-driver"),
        ("bfc_allocator.cc", "allocator"),
        ("interleave_dataset_op.cc", "tf-data"),
        ("tensorflow/contrib/tensor_forest/kernels/count_extremely_random_stats_op.cc", "kernel-compute"),  # TF 1.x
        ("C:\\tf_jenkins\\workspace\\tensorflow\\core\\common_runtime\\gpu\\gpu_device.cc", "gpu-driver"),
        ("external/org_tensorflow/tensorflow/compiler/xla/python/xla.cc", "xla"),
        ("tensorflow/core/protobuf/meta_graph.pb.cc", "protobuf-serialization"),
    ],
)
def test_a_source_file_names_its_subsystem(ref, category):
    assert layout.source_file(ref).category == category


def test_a_basename_in_two_subsystems_is_settled_by_the_neighbouring_frames():
    # tensorflow/compiler/tf2xla/kernels/conv_ops.cc against tensorflow/core/kernels/conv_ops.cc
    assert layout.source_file("conv_ops.cc") is None
    assert layout.source_file("conv_ops.cc", ["kernel-compute"]).category == "kernel-compute"
    assert layout.source_file("conv_ops.cc", ["xla"]).category == "xla"


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("pjrt::PJRT_Buffer_Memory(PJRT_Buffer_Memory_Args*)", "xla"),
        ("stream_executor::gpu::CudnnExecutionPlanRunner<>::operator()()", "gpu-driver"),
        ("tensorflow::data::experimental::SnapshotDatasetV2Op::Dataset::Iterator::Reader::~Reader()", "tf-data"),
        # a return type printed before the function, and a container's types
        ("std::unordered_map<a, b>::value_type::second_type google::protobuf::FindPtrOrNull<std::unordered_map<a, b> >(x)", "protobuf-serialization"),
        ("logging::LogMessage::~LogMessage()", None),  # Chromium's logging: not a namespace TensorFlow declares
    ],
)
def test_a_function_is_placed_by_its_classes_and_namespaces(name, category):
    place = layout.symbol(name)
    assert (place.category if place else None) == category


@pytest.mark.parametrize(("op", "category"), [("DepthToSpace", "kernel-compute"), ("InterleaveDataset", "tf-data"), ("XlaConv", "xla"), ("CONV_2D", "interpreter-invoke")])
def test_ops_of_the_registry_and_tflite_builtins(op, category):
    assert layout.op(op).category == category


@pytest.mark.parametrize(
    ("text", "category", "fault_kind"),
    [
        # pytorch/xla#8591 (TF 2.21-era absl logging: only the basename)
        ("F0120 12:29:23.305308   34355 fusion_emitter.cc:6694] Check failed: fusion_util::IsFusibleUnalignedDUS(user, target_)\n"
         "*** Check failure stack trace: ***\n    @     0x70cb5d4a55c4  (unknown)\n", "xla", "check-failure"),
        # a TF 1.x contrib kernel by its path
        ("F tensorflow/contrib/tensor_forest/kernels/count_extremely_random_stats_op.cc:404] Check failed: current_node > 0\nAborted (core dumped)\n",
         "kernel-compute", "check-failure"),
        # tensorflow/tensorflow#80529: the op named in the text
        ("Floating point exception (core dumped) in `tf.raw_ops.Reshape`\nFloating point exception (core dumped)\n", "kernel-compute", "divide-by-zero"),
    ],
)
def test_triage_reads_names_through_the_index(text, category, fault_kind):
    got = triage_text(text).classification
    assert (got.category, got.fault_kind) == (category, fault_kind), got.evidence


def test_the_index_loads_on_first_use_only():
    code = ("import coreanalyze.classify.classifier, coreanalyze.triage.parse\n"
            "from coreanalyze.classify import layout\nprint(layout.index.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0"


def test_the_committed_data_is_compact():
    size = sum(p.stat().st_size for p in layout.LAYOUT_DIR.iterdir())
    assert size < 1_500_000
