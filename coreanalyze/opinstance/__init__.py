"""Which node of the model crashed: the op instance a kernel frame was running, read from the
core's memory (no DWARF), with layouts of the framework's objects kept as data per version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coreanalyze.base.model import Frame, OpInput, OpInstance, Report
from coreanalyze.opinstance.layouts import layouts_for
from coreanalyze.process.process import Process

if TYPE_CHECKING:
    from coreanalyze.symbols import Symbolizer

__all__ = ["add_op_instance", "describe_inputs", "node_sentence"]


def shape_text(item: OpInput) -> str:
    if item.dtype is None:
        return "(absent)"
    return f"{item.dtype}[{','.join(str(d) for d in item.shape or [])}]"


def describe_inputs(instance: OpInstance) -> str:
    return " x ".join(shape_text(i) for i in instance.inputs) or "no inputs"


def node_sentence(instance: OpInstance) -> str:
    """'In node `x` (LRNGrad, inputs float32[1,4] x float32[1]).' for the summary."""
    what = instance.op if instance.node_index is None else f"{instance.op}, node index {instance.node_index}"
    if instance.delegate:
        what += f", delegate {instance.delegate}"
    return f"In node `{instance.node}` ({what}, inputs {describe_inputs(instance)})."


def add_op_instance(report: Report, process: Process, symbolizer: Symbolizer, *, sysroot: str | None = None, kernel: Frame | None = None,
                    kernel_at: int | None = None) -> None:
    """Read the op instance of the crashing thread's kernel frame into report.classification.
    kernel, kernel_at: the op's frame read from the stack (classify.beyond) where the frames
    hold none, and where on the stack its return address lies.

    Nothing happens when no kernel was running; a kernel whose instance does not validate
    leaves op_instance empty and says so in the warnings. Never raises for a broken core."""
    from coreanalyze.opinstance.codenames import CodeNames
    from coreanalyze.opinstance.tensorflow import read_tensorflow_op
    from coreanalyze.opinstance.tflite import read_tflite_node
    from coreanalyze.process.filebacked import data_files

    thread = report.crashed_thread
    if thread is None or process is None:
        return
    try:
        CodeNames(report.modules, process, symbolizer)  # the process names code through it
        version = report.environment.get("tensorflow_version")
        reading = read_tensorflow_op(process, thread, layouts_for("tensorflow", version), kernel, kernel_at)
        if reading is None:
            data_files(process, sysroot=sysroot, core_path=report.core.path if report.core else None)
            reading = read_tflite_node(process, thread, layouts_for("tflite", version))
    except Exception as e:  # noqa: BLE001 — an optional stage: whatever a broken core does, the report stands
        report.warnings.append(f"the op instance could not be read: {type(e).__name__}: {e}")
        return
    finally:
        symbolizer.close()  # the core's one symbolizer, its indexes let go: they are large
    if reading is None:
        return
    classification = report.classification
    if reading.instance is None:
        classification.op_instance_unread = reading.problem
        classification.evidence.append(f"op instance: could not be read ({reading.problem})")
        return
    classification.op_instance = reading.instance
    classification.summary = f"{classification.summary.rstrip()} {node_sentence(reading.instance)}".strip()
    instance = reading.instance
    # A TFLite node has no kernel object: it is read from the interpreter's node and registration.
    source = f"the {instance.kernel} kernel object" if instance.kernel else f"the {instance.framework} node and its registration"
    classification.evidence.append(f"op instance: node {instance.node!r} read from {source} (layout {instance.layout})")
    for path, checked in instance.read_from_files.items():
        classification.evidence.append(f"op instance: fields read from the mapped file {path} (identity checked: {checked})")
    for what in instance.missing:
        classification.evidence.append(f"op instance: not read: {what}")
