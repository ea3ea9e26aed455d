"""General causes found on the tuning half of issue 46's eighth blind round
(tests/data/blind/issue46_round8.toml), each tested on a text of its own, and the round's numbers.

The round: 30 crash texts collected after round 7's causes were written (TensorFlow's and its
ecosystem's issues: XLA, JAX, Keras, the Edge TPU; downstream projects, one thread each), labelled
before the tool ran and split by the parity of the SHA-256 of their source URL (13 to tune on, 17
held out). On arrival, with round 7's causes: tune category 5/13, fault kind 11/13, 1 refused; held
out 8/17, 12/17, 3 refused (the tool as round 4 left it: tune 5/13, 11/13, 1 refused; held out
8/17, 10/17, 5 refused).
"""

from __future__ import annotations

import pytest

from coreanalyze.triage import triage_text
from tests.support import blindsets


def test_making_a_tf1_session_is_the_graph_runtime():
    text = "import tensorflow as tf\nwith tf.Session() as s:\n    predict()\nSegmentation fault (core dumped)\n"
    c = triage_text(text, "session.txt").classification
    assert c.category == "tf-runtime", c.evidence


def test_a_dataset_function_of_the_api_names_tf_data():
    text = "Segfault reading dataset twice (`make_batched_features_dataset`)\nSegmentation fault: 11\n"
    c = triage_text(text, "dataset_fn.txt").classification
    assert c.category == "tf-data", c.evidence


@pytest.mark.parametrize("receiver", ["random", "np", "jnp", "math"])
def test_a_scripts_module_names_no_source_file(receiver):
    c = triage_text(f"b = {receiver}.normal(key, ())\nSegmentation fault (core dumped)\n", "module.txt").classification
    assert c.category == "unknown", c.evidence


def test_jupyters_kernel_restarter_says_the_kernel_died():
    text = "[I 10:42:11.123 NotebookApp] KernelRestarter: restarting kernel (1/5), keep random ports\n"
    c = triage_text(text, "restarter.txt").classification
    assert any("kernel process died" in e for e in c.evidence), c.evidence


@pytest.mark.parametrize(
    "line, category",
    [
        ("2019-03-01 10:00:00.123: E tensorflow/stream_executor/cuda/cuda_driver.cc:300] failed call to cuInit: UNKNOWN ERROR (-1)", "gpu-driver"),
        ("ERROR: could not open the model file", "unknown"),
    ],
    ids=["glog-E", "logger"],
)
def test_an_error_log_line_alone_is_a_stated_error_placed_by_its_file(line, category):
    c = triage_text(f"Running inference\n{line}\n", "logged.txt").classification
    assert (c.category, c.fault_kind) == (category, "unknown"), c.evidence


TUNE, HELD_OUT = blindsets.halves("issue46_round8.toml")


def test_the_split_is_the_one_fixed_before_the_verdicts():
    assert (len(TUNE), len(HELD_OUT)) == (13, 17)


# (category right, fault kind right, refused) after the causes above: floors that must hold.
test_each_half_keeps_its_numbers = blindsets.floors("issue46_round8.toml", (7, 11, 0), (8, 13, 2))
