"""A Python snippet that calls the crashed op directly (tf.raw_ops.<Op>) with the inputs and
attributes read from memory. Made only when every input's values and every attribute were
read; everything in it comes from the core, so each part is spelled by repr() of a checked
Python value or matched against an identifier pattern, never pasted in as read."""

from __future__ import annotations

import re

from coreanalyze.base.model import OpInstance
from coreanalyze.opinstance.layouts import DType
from coreanalyze.opinstance.nodedef import NodeDefinition

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class NoReproducer(Exception):
    """Why no snippet can be written."""


def _literal(value: object) -> str:
    if isinstance(value, DType):
        return f"tf.{value.name}"
    if isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise NoReproducer(f"no Python spelling for {type(value).__name__}")


def reproducer(instance: OpInstance, definition: NodeDefinition, *, graph: bool = False) -> str:
    """The snippet, or NoReproducer saying what was missing.

    graph: the node ran in a graph (a tf.function's executor): the op is called inside a
    tf.function whose inputs have unknown shapes, so that it runs the way it did (executor,
    thread pool) and graph construction cannot reject or fold it first."""
    if not instance.op or not IDENTIFIER.match(instance.op):
        raise NoReproducer("the op type is not a raw op name")
    if any(arg.is_list for arg in definition.input_args):
        raise NoReproducer("the op takes a list of tensors")
    if len(definition.input_args) != len(instance.inputs):
        raise NoReproducer(f"the op declares {len(definition.input_args)} inputs, the kernel had {len(instance.inputs)}")
    if definition.unreadable:
        name, why = next(iter(definition.unreadable.items()))
        raise NoReproducer(f"attribute {name} could not be read ({why})")
    inferred = {arg.type_attr for arg in definition.input_args if arg.type_attr}
    names, tensors, specs = [], [], []
    for arg, item in zip(definition.input_args, instance.inputs):
        if not IDENTIFIER.match(arg.name):
            raise NoReproducer("an input name is not an identifier")
        if item.dtype is None or item.value is None or any(v is None for v in item.value):
            raise NoReproducer(f"the values of input {arg.name} were not read")
        values = ", ".join(_literal(v) for v in item.value)
        names.append(arg.name)
        tensors.append(f"tf.constant([{values}], dtype=tf.{item.dtype}, shape={list(item.shape or [])!r})")
        specs.append(f"tf.TensorSpec(None, tf.{item.dtype})")
    attributes = []
    for name, kind in definition.attr_kinds.items():
        if name in inferred:
            continue  # tf.raw_ops infers it from the inputs
        if not IDENTIFIER.match(name):
            raise NoReproducer("an attribute name is not an identifier")
        if name not in definition.attrs:
            raise NoReproducer(f"attribute {name} ({kind}) was not read")
        attributes.append(f"{name}={_literal(definition.attrs[name])}")
    header = [
        f"# Calls the op of node {instance.node!r} with the inputs and attributes read from the core.",
        "# Untested: run it in a fresh process; it should crash the same way.",
        "import tensorflow as tf",
        "",
    ]
    if not graph:
        body = [f"tf.raw_ops.{instance.op}("]
        body += [f"    {name}={tensor}," for name, tensor in zip(names, tensors)]
        body += [f"    {attribute}," for attribute in attributes]
        return "\n".join([*header, *body, ")"]) + "\n"
    body = [
        "# As a graph node, the way it ran: unknown input shapes keep graph construction from",
        "# rejecting or folding the call before the kernel runs.",
        f"@tf.function(input_signature=[{', '.join(specs)}])",
        f"def run({', '.join(names)}):",
        f"    return tf.raw_ops.{instance.op}(",
    ]
    body += [f"        {name}={name}," for name in names]
    body += [f"        {attribute}," for attribute in attributes]
    body += ["    )", "", "", "run("]
    body += [f"    {tensor}," for tensor in tensors]
    return "\n".join([*header, *body, ")"]) + "\n"
