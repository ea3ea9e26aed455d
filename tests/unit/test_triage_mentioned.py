"""When nothing near a pasted crash names a subsystem, the text's other words may still: a title,
the script pasted above a long log, an app named after the library on the verdict's own line.
The `anywhere` line rules read the whole text then (category.mentioned_category), nearest the
crash first; names (ops, calls) only from lines no parser read as a frame."""

from __future__ import annotations

from pathlib import Path

from coreanalyze.triage.parse import triage_text

PEER = Path(__file__).resolve().parent.parent / "data" / "peer"

# An Android app named after TensorFlow Lite; the verdict's own line is all the text names.
LOGCAT = """\
05-21 12:35:34.290 18734-18789/android.example.com.tflitecamerademo A/libc: Fatal signal 11 (SIGSEGV), code 1, fault addr 0x0 in tid 18789 (CameraBackgroun)
05-21 12:35:34.376 18794-18794/? A/DEBUG: *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
"""

# TensorFlow Lite Micro's tensor arena, in a host build's own printout.
MICRO_DEMO = """\
./demo

Model loaded!, Size:6052, Version:3
Model description: TOCO Converted.
Tensor arena allocated on stack
Allocator working (ish): Size=0
Segmentation fault: 11
"""


def _script_far_above(n: int) -> str:
    noise = "".join(f"step {i}: loss=0.{i:04d}\n" for i in range(n))
    return "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x).map(parse)\n" + noise + "Segmentation fault (core dumped)\n"


def test_an_app_named_after_tflite_on_the_verdicts_line_is_tflite():
    c = triage_text(LOGCAT, "logcat.txt").classification
    assert (c.category, c.fault_kind) == ("interpreter-invoke", "null-deref"), c.evidence
    assert any("nothing nearer the crash named a subsystem" in e for e in c.evidence)


def test_tflite_micros_tensor_arena_names_the_interpreter():
    c = triage_text(MICRO_DEMO, "demo.txt").classification
    assert c.category == "interpreter-invoke", c.evidence


def test_a_pipeline_far_above_the_verdict_still_says_what_ran():
    near = triage_text(_script_far_above(5), "near.txt").classification
    far = triage_text(_script_far_above(200), "far.txt").classification
    assert near.category == far.category == "tf-data", (near.evidence, far.evidence)
    assert any("nothing nearer" in e for e in far.evidence)


def test_a_verdict_with_nothing_said_anywhere_stays_unknown():
    c = triage_text("running my program\nSegmentation fault (core dumped)\n", "bare.txt").classification
    assert c.category == "unknown"


def test_a_frames_names_are_not_read_again_as_a_lines_words():
    # Chromium's MemorySanitizer report: its frames name `Context::TryFilters`; read as a line's
    # call, that is TensorFlow's `context.cc`. No subsystem of ours ran.
    c = triage_text((PEER / "msan_uninitialized_value.txt").read_text(encoding="utf-8"), "msan.txt").classification
    assert c.category == "unknown", c.evidence


def test_a_nearer_rule_is_not_overruled_by_a_mention_far_away():
    text = "model = tf.lite.Interpreter(model_path='m.tflite')\n" + "x\n" * 100 + "F tensorflow/core/kernels/strided_slice_op.cc:120] Check failed: x\nAborted (core dumped)\n"
    c = triage_text(text, "near.txt").classification
    assert c.category == "kernel-compute", c.evidence
