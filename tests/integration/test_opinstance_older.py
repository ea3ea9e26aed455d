"""The op-instance tests on cores of an older TensorFlow (tests/older_tensorflow.txt: 2.16, whose
objects and protobuf containers are laid out differently from 2.21's), installed
once per test run into its own virtual environment from pip's cache (./setup.sh fills it; the
session starts the installation on a thread of its own at its start, tests/conftest.py):
the layout data is chosen by the core's TensorFlow version and measured from that version's
own headers, not tuned to one build.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from support.clirun import analyze_json
from support.opchecks import (
    check_custom_op_segv,
    check_eager_check_failure,
    check_graph_check_failure,
    check_overwritten_kernel,
    check_reproducer,
)
from support.require import require
from support.tfcores import older_requirement, tf_core_cache

pytestmark = pytest.mark.tf


def older_version() -> str:
    return older_requirement().split("==", 1)[1]


@pytest.fixture(scope="module")
def older_python(older_tensorflow) -> Path:
    """The older TensorFlow's environment (support.tfcores.make_older_python), made once per session."""
    return older_tensorflow.result()


@pytest.fixture(scope="module")
def older_cores(older_python, tmp_path_factory):
    with tf_core_cache(older_python, tmp_path_factory.mktemp("older-corpus")) as cache:
        yield cache


@pytest.fixture(scope="module")
def older_reports(older_cores):
    @functools.cache
    def get(name: str) -> dict:
        case = older_cores.get(name)
        return analyze_json(case.core, "--python", str(case.exe))

    return get


def _layout_of_this_version(report: dict) -> None:
    assert report["environment"]["tensorflow_version"] == older_version()
    major_minor = ".".join(older_version().split(".")[:2])
    assert report["classification"]["op_instance"]["layout"] == f"tensorflow-{major_minor}"


def test_eager_check_failure(older_reports):
    report = older_reports("kernel_check_failure")
    check_eager_check_failure(report["classification"])
    _layout_of_this_version(report)


def test_graph_node(older_reports):
    report = older_reports("graph_check_failure")
    check_graph_check_failure(report["classification"])
    _layout_of_this_version(report)


def test_custom_op_segv(older_reports):
    report = older_reports("kernel_compute_segv")
    check_custom_op_segv(report["classification"])
    _layout_of_this_version(report)


def test_overwritten_kernel(older_reports):
    check_overwritten_kernel(older_reports("kernel_overwritten")["classification"])


def test_reproducer(older_cores, older_reports, tmp_path):
    check_reproducer(older_cores.get("kernel_check_failure"), older_reports("kernel_check_failure")["classification"], tmp_path)


def test_layout_data_is_what_its_headers_say(older_python):
    from coreanalyze.opinstance.layouts import all_layouts, major_minor
    from coreanalyze.opinstance.measure import measure

    version, measured = measure(str(older_python), require("g++"))
    assert version == older_version()
    stored = [lay for lay in all_layouts() if major_minor(version) in lay.versions]
    assert stored and stored[0].fields == measured
