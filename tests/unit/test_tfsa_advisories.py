"""TensorFlow's security advisories as known crashes: the generator's reading of real advisory
texts (tests/data/tfsa/, from tensorflow/security/advisory), the committed tfsa.toml against its
recorded inputs, and the rule that a process on a patched release is not told it matched.
The same entries on real cores of TensorFlow 2.10.0: tests/integration/test_tfsa_cores.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coreanalyze.base import tomlfile
from coreanalyze.base.model import Frame, FrameKind, Report, Thread
from coreanalyze.batch.facts import crash_facts, fill_facts
from coreanalyze.batch.store import CoreRecord, record_from_dict
from coreanalyze.classify import layoutgen
from coreanalyze.known import ADVISORIES, CrashFacts, load_known, parse_file, release_fix, tfsagen
from coreanalyze.known.facts import report_facts

DATA = Path(__file__).resolve().parent.parent / "data" / "tfsa"
REGISTRY = frozenset(layoutgen.load_inputs()["ops"])


def parsed(name: str) -> dict:
    return tfsagen.parse_advisory(name, (DATA / name).read_text(), REGISTRY)


def test_a_check_failure_advisory():
    adv = parsed("tfsa-2022-155.md")
    assert adv["id"] == "TFSA-2022-155"
    assert adv["cves"] == ["CVE-2022-41893"]
    assert adv["title"] == "`CHECK_EQ` fail in `tf.raw_ops.TensorListResize`"
    assert adv["ops"] == ["TensorListResize"]
    assert adv["fault_kinds"][0] == "check-failure"
    assert adv["patched"] == ["2.8.4", "2.9.3", "2.10.1", "2.11.0"]  # "included in TensorFlow 2.11" is 2.11.0
    assert adv["commits"] == ["888e34b49009a4e734c27ab0c43b0b5102682c56"]
    assert not adv["xla"]


def test_a_null_pointer_advisory_names_its_op_in_the_title():
    adv = parsed("tfsa-2023-006.md")
    assert adv["ops"] == ["SparseSparseMaximum"]
    assert set(adv["fault_kinds"]) == {"null-deref", "invalid-access"}
    assert adv["patched"] == ["2.11.1", "2.12.0"]


def test_the_op_of_a_raw_op_link_and_a_segfault_in_prose():
    adv = parsed("tfsa-2022-145.md")
    assert adv["ops"] == ["DynamicStitch"]
    assert set(adv["fault_kinds"]) == {"null-deref", "invalid-access"}
    assert adv["patched"] == ["2.10.1", "2.11.0"]


def test_a_release_the_advisory_says_it_will_not_patch_is_not_patched():
    adv = parsed("tfsa-2022-150.md")
    assert adv["patched"] == ["2.9.3", "2.10.1", "2.11.0"]  # "will not cherrypick ... into TensorFlow 2.8.x"
    assert adv["ops"] == []  # tf.keras.losses.poisson: a Python API, no op to match
    assert tfsagen.entry_of(adv) is None


def test_fault_words():
    assert tfsagen.fault_kinds("FPE in AvgPoolGrad with XLA", "") == ["divide-by-zero"]
    assert tfsagen.fault_kinds("Double free in Fractional(Max/Avg)Pool", "")[0] == "heap-corruption"
    assert tfsagen.fault_kinds("Memory leak in decode_png", "") == []
    assert tfsagen.fault_kinds("Memory corruption in `DrawBoundingBoxesV2`", "")[0] == "heap-corruption"  # TFSA-2021-059
    assert tfsagen.fault_kinds("Division by 0 in `Conv2D`", "") == ["divide-by-zero"]  # TFSA-2021-015
    assert tfsagen.fault_kinds("Bad alloc in `StringNGrams` caused by integer conversion", "")[0] == "uncaught-exception"
    assert tfsagen.fault_kinds("OOM due to integer overflow in `StringNGrams`", "") == ["out-of-memory"]  # TFSA-2022-009
    assert tfsagen.fault_kinds("", "this value of `axis_` results in heap underflow")[0] == "heap-corruption"  # TFSA-2021-099
    assert tfsagen.fault_kinds("", "can cause reads outside\nof bounds of heap allocated data")[0] == "null-deref"


def test_an_old_advisory_says_its_fix_under_mitigation():
    # 2018's and 2019's advisories have no "### Patches": "### Mitigation" names the commit and the
    # releases ("switch to TensorFlow 1.15 or 2.0 as these versions contain the fix"); the
    # "### Vulnerable Versions" list is not a fix.
    adv = parsed("tfsa-2019-002.md")
    assert adv["title"] == "Heap buffer overflow in `UnsortedSegmentSum`"
    assert adv["cves"] == ["CVE-2019-16778"]
    assert adv["ops"] == ["UnsortedSegmentSum"]
    assert adv["fault_kinds"][0] == "heap-corruption"
    assert adv["patched"] == ["1.15.0", "2.0.0"]
    assert adv["commits"] == ["db4f9717c41bccc3ce10099ab61996b246099892"]  # the link's, not its short text
    assert tfsagen.entry_of(adv)["fixed_in"] == ["1.15.0", "2.0.0"]


def test_a_2018_title_loses_its_full_stop_and_a_file_parser_is_no_op():
    adv = parsed("tfsa-2018-001.md")
    assert adv["title"] == "BMP File Parser Out-of-bounds Read"
    assert adv["patched"] == ["1.7.0"]  # "integrated into TensorFlow 1.7.0 and newer"
    assert adv["commits"] == ["49f73c55d56edffebde4bca4a407ad69c1cae433"]
    assert adv["ops"] == [] and tfsagen.entry_of(adv) is None


def test_a_title_under_a_single_hash():
    adv = parsed("tfsa-2022-166.md")  # "# TFSA-2022-166: ..." where the others have "## "
    assert adv["id"] == "TFSA-2022-166"
    assert adv["title"] == "Invalid char to bool conversion when printing a tensor"


def test_a_range_of_release_lines_is_no_release():
    # "will release TensorFlow 2.4.0 containing the patch ... we will patch all releases between
    # 1.15 and 2.3 inclusive": 2.4.0 is a release; "between 1.15 and 2.3" names no patch release.
    adv = parsed("tfsa-2020-030.md")
    assert adv["patched"] == ["2.4.0"]
    assert adv["ops"] == ["DataFormatVecPermute", "DataFormatDimMap"]  # raw ops of the prose
    assert adv["commits"] == ["ebc70b7a592420d3d2f359e4b1694c236b82c7ae"]
    # Those lines got the fix in releases it does not name: a 2.3.2 process may have it or not,
    # so no entry rather than telling a patched release it is not.
    assert adv["unnamed_patches"] and tfsagen.entry_of(adv) is None


def test_the_ops_of_the_first_sentence_that_names_any():
    # "The `SparseCountSparseOutput` and `RaggedCountSparseOutput` implementations don't validate
    # ... The check exists for `DenseCountSparseOutput`": the third op is the one that is safe.
    adv = parsed("tfsa-2020-020.md")
    assert adv["ops"] == ["SparseCountSparseOutput", "RaggedCountSparseOutput"]
    assert adv["patched"] == ["2.3.1"]  # "We recommend users to upgrade to TensorFlow 2.3.1."


def test_a_family_of_ops_in_the_title_is_its_raw_ops():
    adv = parsed("tfsa-2021-004.md")  # "Reference binding to null pointer in `MatrixDiag*` ops"
    assert adv["ops"] == ["MatrixDiagV2", "MatrixDiagV3"]
    assert adv["patched"] == ["2.1.4", "2.2.3", "2.3.3", "2.4.2", "2.5.0"]


def test_a_reproducer_that_calls_the_prose_op_is_read_whole():
    # "The same undefined behavior can be triggered by `tf.raw_ops.RestoreSlice`": the prose names
    # the second op only; the reproducers call both, so both are the advisory's.
    adv = parsed("tfsa-2021-113.md")
    assert adv["ops"] == ["Restore", "RestoreSlice"]
    assert adv["patched"] == ["2.3.4", "2.4.3", "2.5.1", "2.6.0"]


def test_every_version_of_a_versioned_family():
    # "in all operations of type `tf.raw_ops.MatrixDiagV*`"; the reproducer calls V3 only.
    adv = parsed("tfsa-2021-131.md")
    assert adv["ops"] == ["MatrixDiagV3", "MatrixDiagV2"]


def test_a_family_in_the_prose_is_no_op_and_not_every_op_it_begins():
    # "in `tf.raw_ops.Map*` and `tf.raw_ops.OrderedMap*` operations": Map and OrderedMap are no
    # ops, and all ops named Map... (MapDataset, MapDefun) would be far too broad; MapPeek, the
    # reproducer's, is the advisory's.
    adv = parsed("tfsa-2021-145.md")
    assert adv["ops"] == ["MapPeek"]


def test_the_reproducers_member_of_the_titles_op_family():
    # "Heap OOB in `FusedBatchNorm` kernels": the reproducer calls FusedBatchNormGrad.
    adv = parsed("tfsa-2021-169.md")
    assert adv["ops"] == ["FusedBatchNorm", "FusedBatchNormGrad"]
    assert adv["patched"] == ["2.4.4", "2.5.2", "2.6.1", "2.7.0"]


def test_an_advisory_whose_ops_are_too_generic_gets_no_entry():
    # "Null pointer exception when `Exit` node is not preceded by `Enter` op": the executor crashes
    # laying out the graph, in no Exit or Enter kernel, and every graph-mode while loop runs both.
    adv = parsed("tfsa-2021-175.md")
    assert adv["ops"] == []
    assert adv["fault_kinds"] and adv["patched"] == ["2.4.4", "2.5.2", "2.6.1", "2.7.0"]
    assert tfsagen.entry_of(adv) is None


def test_a_raw_op_family_in_the_title():
    # "Heap OOB read in all `tf.raw_ops.QuantizeAndDequantizeV*` ops": QuantizeAndDequantizeV is no op.
    adv = parsed("tfsa-2021-185.md")
    assert adv["ops"] == [
        "QuantizeAndDequantizeV4Grad", "QuantizeAndDequantizeV4", "QuantizeAndDequantizeV3", "QuantizeAndDequantizeV2",
    ]  # fmt: skip


def test_a_kernel_class_named_as_a_raw_op_is_its_op():
    # "`tf.raw_ops.MatrixDiagPartOp`" is no op; MatrixDiagPart is (its kernel class is
    # MatrixDiagPartOp), and the reproducer calls MatrixDiagPartV2.
    adv = parsed("tfsa-2021-118.md")
    assert adv["ops"] == ["MatrixDiagPart", "MatrixDiagPartV2"]


def test_a_title_with_alternatives_names_each_op():
    adv = parsed("tfsa-2021-124.md")  # "... in `{Experimental,}DatasetToTFRecord`"
    assert adv["ops"] == ["ExperimentalDatasetToTFRecord", "DatasetToTFRecord"]
    assert adv["fault_kinds"][0] == "heap-corruption"


def test_division_by_0_and_a_family_of_raw_ops():
    adv = parsed("tfsa-2021-011.md")  # "Division by 0 in `Conv3DBackprop*`"
    assert adv["fault_kinds"] == ["divide-by-zero"]
    # "The `tf.raw_ops.Conv3DBackprop*` operations": the family's name is no op of its own.
    assert adv["ops"] == ["Conv3DBackpropInputV2", "Conv3DBackpropFilterV2"]


def test_the_word_check_is_no_check_failure():
    # "The fix is to either explicitly check `context->status()`": the impact's crash is its
    # "null pointer dereference", not a CHECK.
    adv = parsed("tfsa-2021-018.md")
    assert adv["ops"] == ["SparseMatrixSparseCholesky"]
    assert set(adv["fault_kinds"]) == {"null-deref", "invalid-access"}
    assert tfsagen.fault_kinds("`CHECK`-fail in `SparseCross` due to type confusion", "")[0] == "check-failure"


def test_a_reproducer_of_another_op_is_not_the_advisory_op():
    # TFSA-2021-005's prose calls tf.raw_ops.RaggedTensorToVariant; its reproducers are Conv3D's
    # (TFSA-2021-006's): a Conv3D crash is not this advisory.
    adv = parsed("tfsa-2021-005.md")
    assert adv["ops"] == ["RaggedTensorToVariant"]
    assert set(adv["fault_kinds"]) == {"null-deref", "invalid-access"}


def test_a_folder_builds_a_file_the_known_crashes_read(tmp_path, monkeypatch):
    files = tfsagen.read_dir(DATA)
    inputs = {
        "provenance": {"source": "tests/data/tfsa", "commit": None, "path": tfsagen.ADVISORY_PATH, "files": len(files),
                       "sha256": tfsagen.digest(files), "op_registry": {"distribution": "tensorflow", "version": "x"}},
        "ops": sorted(REGISTRY),
        "files": files,
    }  # fmt: skip
    out = tmp_path / "tfsa.toml"
    out.write_text(tfsagen.build(inputs))
    data = tomlfile.loads(out.read_text())
    assert data["provenance"]["read"] == [
        "TFSA-2018-001", "TFSA-2019-002", "TFSA-2020-020", "TFSA-2020-030", "TFSA-2021-004", "TFSA-2021-005",
        "TFSA-2021-011", "TFSA-2021-018", "TFSA-2021-113", "TFSA-2021-118", "TFSA-2021-124", "TFSA-2021-131",
        "TFSA-2021-145", "TFSA-2021-169", "TFSA-2021-175", "TFSA-2021-185", "TFSA-2022-145", "TFSA-2022-150",
        "TFSA-2022-155", "TFSA-2022-166", "TFSA-2023-006",
    ]  # fmt: skip
    assert data["provenance"]["without_entry"] == ["TFSA-2018-001", "TFSA-2020-030", "TFSA-2021-175", "TFSA-2022-150", "TFSA-2022-166"]
    assert data["provenance"]["inputs_sha256"] == tfsagen.digest(files)
    entries = {e.id: e for e in parse_file(out)}
    assert set(entries) == {
        "TFSA-2019-002", "TFSA-2020-020", "TFSA-2021-004", "TFSA-2021-005", "TFSA-2021-011",
        "TFSA-2021-018", "TFSA-2021-113", "TFSA-2021-118", "TFSA-2021-124", "TFSA-2021-131", "TFSA-2021-145",
        "TFSA-2021-169", "TFSA-2021-185", "TFSA-2022-145", "TFSA-2022-155", "TFSA-2023-006",
    }  # fmt: skip
    assert entries["TFSA-2019-002"].fixed_in == {"tensorflow": ("1.15.0", "2.0.0")}
    resize = entries["TFSA-2022-155"]
    assert resize.before_fix and resize.fixed_in == {"tensorflow": ("2.8.4", "2.9.3", "2.10.1", "2.11.0")}
    assert resize.title.startswith("TFSA-2022-155 (CVE-2022-41893): ")
    assert resize.url == "https://github.com/tensorflow/tensorflow/blob/master/tensorflow/security/advisory/tfsa-2022-155.md"


def test_the_committed_file_is_what_its_recorded_inputs_make():
    inputs = tfsagen.load_inputs()
    assert tfsagen.build(inputs) == ADVISORIES.read_text(encoding="utf-8"), "run python -m coreanalyze.known.tfsagen --build-only"
    assert inputs["provenance"]["sha256"] == tfsagen.digest(inputs["files"])
    assert inputs["provenance"]["files"] == len(inputs["files"])


def test_the_committed_file_has_the_advisories_of_the_real_cores():
    ids = {e.id for e in parse_file(ADVISORIES)}
    assert {"TFSA-2022-145", "TFSA-2022-155", "TFSA-2023-006"} <= ids


@pytest.mark.parametrize(
    ("ran", "patched", "expected"),
    [
        ("2.10.0", ["2.8.4", "2.9.3", "2.10.1", "2.11.0"], ("2.10.1", False)),  # its line's patch
        ("2.10.1", ["2.8.4", "2.9.3", "2.10.1", "2.11.0"], ("2.10.1", True)),
        ("2.9.5", ["2.8.4", "2.9.3", "2.10.1", "2.11.0"], ("2.9.3", True)),
        ("2.10.0", ["2.11.1", "2.12.0"], ("2.11.1", False)),  # its line never got the fix
        ("2.7.0", ["2.8.4", "2.9.3"], ("2.8.4", False)),
        ("2.16.2", ["2.11.1", "2.12.0"], ("2.12.0", True)),  # a line made after the fix
        (None, ["2.11.1", "2.12.0"], (None, False)),
    ],
)
def test_the_fix_for_a_release_line(ran, patched, expected):
    assert release_fix(ran, patched) == expected


RESIZE_FRAMES = (
    "__pthread_kill_implementation",
    "tensorflow::internal::LogMessageFatal::~LogMessageFatal()",
    "tensorflow::Tensor::CheckIsAlignedAndSingleElement() const [clone .cold]",
    "tensorflow::TensorListResize::Compute(tensorflow::OpKernelContext*)",
    "tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)",
)


def test_an_older_release_is_told_its_fix_and_what_it_ran():
    facts = CrashFacts(fault_kind="check-failure", frames=RESIZE_FRAMES, versions={"tensorflow": "2.9.1"})
    entry = load_known().match(facts)
    assert entry.id == "TFSA-2022-155"
    verdict = entry.verdict(facts)
    assert verdict["note"] == "TFSA-2022-155, fixed in 2.9.3; this process ran 2.9.1"
    assert verdict["fixed_in"] == {"tensorflow": "2.9.3"} and verdict["ran"] == {"tensorflow": "2.9.1"}


def test_a_patched_release_is_not_told():
    for version in ("2.9.3", "2.10.1", "2.11.0", "2.21.0"):
        assert (
            load_known().match(CrashFacts(fault_kind="check-failure", frames=RESIZE_FRAMES, versions={"tensorflow": version}))
            is None
        )


def test_an_unknown_version_is_told_every_fix():
    facts = CrashFacts(fault_kind="check-failure", frames=RESIZE_FRAMES)
    verdict = load_known().match(facts).verdict(facts)
    assert verdict["note"] == "TFSA-2022-155, fixed in 2.8.4, 2.9.3, 2.10.1, 2.11.0"


def test_another_fault_or_op_is_not_the_advisory():
    frames = (*RESIZE_FRAMES[:3], "tensorflow::TensorListLength::Compute(tensorflow::OpKernelContext*)")
    assert load_known().match(CrashFacts(fault_kind="check-failure", frames=frames, versions={"tensorflow": "2.10.0"})) is None
    assert (
        load_known().match(CrashFacts(fault_kind="divide-by-zero", frames=RESIZE_FRAMES, versions={"tensorflow": "2.10.0"}))
        is None
    )


def test_the_ops_of_the_crashing_thread():
    frames = (
        "void tensorflow::(anonymous namespace)::UnionSparseIndicesAndValues<float>(Eigen::TensorMap<...>)",
        "tensorflow::SparseSparseBinaryOpShared<Eigen::ThreadPoolDevice, float, tensorflow::functor::maximum<float> >::Compute(tensorflow::OpKernelContext*)",
        "tensorflow::DynamicStitchOpCPU<float, false>::Compute(tensorflow::OpKernelContext*)",
        "sparse_sparse_maximum",
        "<module>",
    )
    # A Python function is an op only as TensorFlow's generated wrapper (a frame of gen_*_ops.py):
    # a script's own save() is not op Save.
    assert CrashFacts(frames=frames).ops == {"sparsesparsebinaryopshared", "dynamicstitch"}
    assert "sparsesparsemaximum" in CrashFacts(frames=frames, op_wrappers=("sparse_sparse_maximum",)).ops


def test_a_tflite_advisory_is_not_a_tensorflow_op():
    text = (DATA / "tfsa-2022-155.md").read_text().replace("`CHECK_EQ` fail in `tf.raw_ops.TensorListResize`", "OOB read in `TensorListResize` in TF Lite Micro")
    adv = tfsagen.parse_advisory("tfsa-2022-155.md", text, REGISTRY)
    assert adv["ops"] == ["TensorListResize"] and adv["tflite"]
    assert tfsagen.entry_of(adv) is None


def _report(version: str | None) -> Report:
    """DynamicStitch's crash as TFSA-2022-145's reproducer leaves it: the fault is in the eager
    runtime's kernel lookup, and only the generated Python wrapper names the op."""
    frames = [
        Frame(0, function="tensorflow::(anonymous namespace)::GetOrCreateKernelAndDevice(tensorflow::EagerOperation*)"),
        Frame(1, function="TFE_Py_FastPathExecute_C(_object*)"),
        Frame(2, kind=FrameKind.PYTHON, function="dynamic_stitch", file="/venv/lib/python3.10/site-packages/tensorflow/python/ops/gen_data_flow_ops.py"),
        Frame(3, kind=FrameKind.PYTHON, function="save", file="/srv/train/train.py"),
    ]
    report = Report(crashing_thread=7, threads=[Thread(7, crashed=True, frames=frames)])
    report.classification.fault_kind = "null-deref"
    if version:
        report.environment["tensorflow_version"] = version
    return report


def test_an_op_before_its_kernel_ran_is_named_by_its_python_wrapper():
    facts = report_facts(_report("2.10.0"))
    assert facts.op_wrappers == ("dynamic_stitch",)  # train.py's save() is no op wrapper
    verdict = load_known().match(facts).verdict(facts)
    assert verdict["id"] == "TFSA-2022-145"
    assert verdict["note"] == "TFSA-2022-145, fixed in 2.10.1; this process ran 2.10.0"


def test_a_batch_record_keeps_the_op_wrappers():
    record = CoreRecord(identity="a" * 64, file_identity="b" * 64, path="/cores/core.1", status="ok")
    fill_facts(record, _report("2.9.0"))
    record.fault_kind = "null-deref"  # the worker's, from the classification
    again = record_from_dict(json.loads(json.dumps(record.to_dict())))
    assert again.ops == ["dynamic_stitch"]
    facts = crash_facts(again)
    assert load_known().match(facts).verdict(facts)["note"] == "TFSA-2022-145, fixed in 2.10.1; this process ran 2.9.0"
