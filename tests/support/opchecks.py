"""What the op instance of each TensorFlow crash scenario must be: the tensors its script fed
and the node names its graph has. Shared by the tests on the installed TensorFlow and on the
older one, which must read the same instances through their own layouts."""

from __future__ import annotations

from support.clirun import analyze_json
from support.coregen import run_to_core
from support.tfcores import quiet_env

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def floats(n: int, start: float = 0.0, step: float = 1.0) -> list[float]:
    return [start + i * step for i in range(n)]


def tensors(inputs: list[dict]) -> list[tuple]:
    return [(i["dtype"], i["shape"], i["value"]) for i in inputs]


def check_eager_check_failure(c: dict) -> None:
    instance = c["op_instance"]
    assert instance is not None, c["evidence"]
    assert (instance["framework"], instance["node"], instance["op"], instance["device"]) == (
        "tensorflow", "LRNGrad", "LRNGrad", CPU0)
    assert [(i["dtype"], i["shape"]) for i in instance["inputs"]] == [
        ("float32", [1, 1, 1, 4]), ("float32", [1, 1, 1, 4]), ("float32", [1])]
    assert [i["value"] for i in instance["inputs"]] == [[1.0] * 4, [1.0] * 4, [1.0]]
    assert "In node `LRNGrad` (LRNGrad, inputs float32[1,1,1,4] x float32[1,1,1,4] x float32[1])" in c["summary"]


def check_graph_check_failure(c: dict) -> None:
    instance = c["op_instance"]
    assert instance is not None, c["evidence"]
    assert (instance["node"], instance["op"], instance["device"]) == ("lrn_backward", "LRNGrad", CPU0)
    assert tensors(instance["inputs"]) == [
        ("float32", [1, 1, 2, 3], [0.5] * 6),
        ("float32", [1, 1, 2, 3], floats(6)),
        ("float32", [1], [2.0]),
    ]
    assert "In node `lrn_backward`" in c["summary"]


def check_custom_op_segv(c: dict) -> None:
    instance = c["op_instance"]
    assert (instance["node"], instance["op"]) == ("ScatterToSlots", "ScatterToSlots")
    assert instance["kernel"].endswith("ScatterToSlotsOp")
    assert tensors(instance["inputs"]) == [("float32", [16], floats(16))]


def check_overwritten_kernel(c: dict) -> None:
    assert c["op_instance"] is None
    assert c["op_instance_unread"], c["evidence"]
    assert "In node" not in c["summary"]
    assert any(e.startswith("op instance: could not be read") for e in c["evidence"])


def check_reproducer(case, original: dict, tmp_path) -> None:
    """Run the report's snippet in a fresh process: it must crash with the same signature."""
    snippet = original["op_instance"]["reproducer"]
    assert snippet and "untested" in snippet.lower()
    assert "tf.raw_ops.LRNGrad(" in snippet
    script = tmp_path / "reproduce.py"
    script.write_text(snippet)
    again = run_to_core(f"{case.name}-reproduced", [str(case.exe), str(script)], tmp_path / "run", env=quiet_env(), timeout=600)
    try:
        reproduced = analyze_json(again.core, "--python", str(case.exe))["classification"]
    finally:
        again.core.unlink(missing_ok=True)
    assert reproduced["signature"] == original["signature"]
    assert reproduced["op_instance"]["op"] == "LRNGrad"
    assert reproduced["op_instance"]["inputs"] == original["op_instance"]["inputs"]
