"""The TensorFlow op instance whose kernel was running when the process died, read from memory.

No DWARF is needed (TensorFlow's wheels have none): the objects are read with the offsets of
layouts/ and everything read is checked before it is believed.

1. The kernel frame: the innermost `X::Compute(OpKernelContext*)` (or `ComputeAsync`) of the
   crashing thread.
2. The OpKernelContext: every pointer-sized word of the crashing thread's registers and stack
   is tried as one. Its Params must name an OpKernel whose vtable's Compute slot holds the very
   function of the kernel frame (the symbol tables name it): the object is the kernel being run,
   of the culprit's class, not a stale pointer to some other object. Two different kernels that
   both pass make the answer ambiguous, and there is none.
3. The kernel's node name and op type (absl::string_view members): printable text, an op type
   that is an identifier. The device (Device::parsed_name_). The inputs (Params::inputs, a Span
   of TensorValue): each Tensor's dtype, shape and element count must agree, and the buffer must
   hold the bytes the shape needs.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass

from coreanalyze.base.model import Frame, OpInput, OpInstance, Thread
from coreanalyze.opinstance.codenames import CodeNames
from coreanalyze.opinstance.layouts import DType, Layout, dtypes
from coreanalyze.opinstance.nodedef import NodeDefReader, Unreadable
from coreanalyze.opinstance.reproducer import NoReproducer, reproducer
from coreanalyze.opinstance.stackwords import pointer_words, words_near
from coreanalyze.process.process import Process

MAX_TEXT = 4096
MAX_INPUTS = 1024
MAX_RANK = 254
MAX_ELEMENTS = 1 << 48
VALUE_ELEMENTS = 16  # inputs with at most this many elements get their values in the report
OP_TYPE = re.compile(r"[A-Za-z_][A-Za-z0-9_>.]*\Z")
DEVICE_TYPE = re.compile(r"[A-Z][A-Z_0-9]*\Z")
KERNEL_COMPUTE = re.compile(r"^(?P<cls>.+)::(?P<method>Compute|ComputeAsync)(?:\((?P<params>.*)\))?(?: const)?$")
KERNEL_PARAMS = ("tensorflow::OpKernelContext*", "tensorflow::OpKernelContext*, std::function<void ()>")
REP16, REP32, REP_OUT_OF_LINE = 0, 1, 2
# Libraries whose kernels tf.raw_ops can call (a custom op's library is loaded by the user).
# The graph executor's frame: a node of a tf.function's graph ran on it (eager ops do not).
GRAPH_EXECUTOR = "ExecutorState"
TENSORFLOW_KERNEL_LIBRARIES = ("libtensorflow_cc.so", "libtensorflow_framework.so", "_pywrap_tensorflow")


class NotValid(Exception):
    """What was read does not hold together under this layout."""


@dataclass
class KernelFrame:
    frame: Frame
    kernel_class: str
    async_kernel: bool


@dataclass
class Reading:
    instance: OpInstance | None
    problem: str | None = None  # why a kernel frame was found but no instance read


def kernel_frame(thread: Thread) -> KernelFrame | None:
    """The innermost op kernel Compute/ComputeAsync frame of the thread."""
    for frame in thread.frames:
        if frame.kind != "native" or not frame.function:
            continue
        m = KERNEL_COMPUTE.match(frame.function)
        if m is None or m.group("cls").endswith("Device"):  # Device::Compute(OpKernel*, ...) runs kernels
            continue
        if m.group("params") is not None and m.group("params") not in KERNEL_PARAMS:
            continue
        return KernelFrame(frame, m.group("cls"), m.group("method") == "ComputeAsync")
    return None


class _Reader:
    def __init__(self, process: Process, layout: Layout):
        self.process = process
        self.layout = layout

    def u64(self, address: int) -> int:
        value = self.process.read_u64(address)
        if value is None:
            raise NotValid(f"0x{address:x} is not in the core")
        return value

    def bytes(self, address: int, size: int) -> bytes:
        data = self.process.read(address, size)
        if data is None:
            raise NotValid(f"{size} bytes at 0x{address:x} are not in the core")
        return data

    def view(self, address: int, group: str, data_word_key: str = "data_word") -> tuple[int, int]:
        """(data pointer, length) of a two-word view (string_view, Span)."""
        words = struct.unpack("<QQ", self.bytes(address, 16))
        data_word = int(self.layout[group][data_word_key])
        return words[data_word], words[1 - data_word]

    def text(self, pointer: int, length: int, what: str) -> str:
        if not 0 < length <= MAX_TEXT:
            raise NotValid(f"{what}: length {length}")
        raw = self.bytes(pointer, length)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise NotValid(f"{what} is not text") from None
        if not text.isprintable():
            raise NotValid(f"{what} is not printable")
        return text

    def std_string(self, address: int, what: str, allow_empty: bool = False) -> str:
        lay = self.layout["std_string"]
        pointer = self.u64(address + 8 * int(lay["data_word"]))
        length = self.u64(address + 8 * int(lay["size_word"]))
        if length == 0 and allow_empty:
            return ""
        return self.text(pointer, length, what)


def _find_kernel(reader: _Reader, found: KernelFrame, names: CodeNames, candidates: list[int]) -> tuple[int, list[int]]:
    """(OpKernel*, candidate Params*) of the running kernel, through contexts among the candidates.

    Several words may lead to the kernel (a context, stale copies, unrelated structs that
    happen to point at it); each Params they lead to is checked later by reading its inputs."""
    lay = reader.layout
    slot = lay.offset("op_kernel", "compute_async_slot" if found.async_kernel else "compute_slot")
    params_at, kernel_at = lay.offset("op_kernel_context", "params"), lay.offset("params", "op_kernel")
    process = reader.process
    checked: dict[int, bool] = {}
    pairs: dict[int, list[int]] = {}
    for context in candidates:
        params = process.read_u64(context + params_at)
        if not params or params % 8 or not process.is_present(params):
            continue
        kernel = process.read_u64(params + kernel_at)
        if not kernel or kernel % 8:
            continue
        if kernel not in checked:
            checked[kernel] = _runs_frame_function(process, kernel, slot, found.frame, names)
        if checked[kernel] and params not in pairs.setdefault(kernel, []):
            pairs[kernel].append(params)
    if not pairs:
        raise NotValid(f"no OpKernelContext on the stack runs a kernel whose vtable holds {found.kernel_class}::Compute")
    if len(pairs) > 1:
        raise NotValid(f"{len(pairs)} different {found.kernel_class} kernels are reachable from the stack")
    return next(iter(pairs.items()))


def _params_inputs(reader: _Reader, candidates: list[int]) -> tuple[int, list[OpInput]]:
    """The one Params among the candidates whose inputs hold together, and those inputs."""
    readable: dict[int, list[OpInput]] = {}
    problems = []
    for params in candidates:
        try:
            readable[params] = _inputs(reader, params)
        except NotValid as e:
            problems.append(str(e))
    if not readable:
        raise NotValid(f"the kernel's inputs could not be read ({problems[0]})")
    distinct = {repr(inputs) for inputs in readable.values()}
    if len(distinct) > 1:
        raise NotValid("contexts with different inputs lead to the kernel")
    return next(iter(readable.items()))


def _runs_frame_function(process: Process, kernel: int, slot: int, frame: Frame, names: CodeNames) -> bool:
    """True when the object's vtable slot holds the frame's own function."""
    vtable = process.read_u64(kernel)
    if not vtable or vtable % 8:
        return False
    # From the core alone: the loader relocates a vtable's slots, the file's bytes are not the process's.
    function = process.read_u64(vtable + 8 * slot, core_only=True)
    if not function or frame.pc is None or function > frame.pc:
        return False
    if frame.offset is not None:
        return function == frame.pc - frame.offset
    if names.module_at(function) is None or names.module_at(function) is not names.module_at(frame.pc):
        return False
    named = names.function_at(function)
    if named is None:
        return False
    raw, start = named
    if start != function:
        return False
    return raw == frame.raw_function if frame.raw_function else False


def _device_name(reader: _Reader, params: int) -> str | None:
    """The device's full name from Device::parsed_name_, or None when it does not validate."""
    lay = reader.layout
    try:
        device = reader.u64(params + lay.offset("params", "device"))
        if not device:
            return None
        parsed = device + lay.offset("device", "parsed_name")
        pn = lay["parsed_name"]

        def flag(name: str) -> bool:
            value = reader.bytes(parsed + int(pn[name]), 1)[0]
            if value > 1:
                raise NotValid("a ParsedName flag is not a bool")
            return bool(value)

        def number(name: str) -> int:
            (value,) = struct.unpack("<i", reader.bytes(parsed + int(pn[name]), 4))
            if not 0 <= value < 1 << 20:
                raise NotValid("a ParsedName number out of range")
            return value

        parts = []
        if flag("has_job"):
            job = reader.std_string(parsed + int(pn["job"]), "device job")
            parts.append(f"/job:{job}")
        if flag("has_replica"):
            parts.append(f"/replica:{number('replica')}")
        if flag("has_task"):
            parts.append(f"/task:{number('task')}")
        if not flag("has_type"):
            raise NotValid("a device without a type")
        device_type = reader.std_string(parsed + int(pn["type"]), "device type")
        if not DEVICE_TYPE.match(device_type):
            raise NotValid("device type is not a device type")
        parts.append(f"/device:{device_type}" + (f":{number('id')}" if flag("has_id") else ""))
        return "".join(parts)
    except NotValid:
        return None


def _dims(reader: _Reader, shape: bytes, tag: int, ndims: int) -> list[int]:
    if tag == REP16:
        if ndims > 6:
            raise NotValid("rank too large for the 16-bit shape form")
        dims = list(struct.unpack("<6H", shape[:12])[:ndims])
        if 0xFFFF in dims:
            raise NotValid("an unknown dimension in a tensor's shape")
        return dims
    if tag == REP32:
        if ndims > 3:
            raise NotValid("rank too large for the 32-bit shape form")
        dims = list(struct.unpack("<3I", shape[:12])[:ndims])
        if 0xFFFFFFFF in dims:
            raise NotValid("an unknown dimension in a tensor's shape")
        return dims
    if tag == REP_OUT_OF_LINE:
        (vector,) = struct.unpack("<Q", shape[:8])
        iv = reader.layout["inlined_vector"]
        meta = reader.u64(vector + 8 * int(iv["meta_word"]))
        size, allocated = meta >> 1, meta & 1
        if size != ndims:
            raise NotValid("an out-of-line shape's size differs from its rank")
        data = reader.u64(vector + 8 * int(iv["allocated_data_word"])) if allocated else vector + int(iv["inline_offset"])
        return list(struct.unpack(f"<{ndims}q", reader.bytes(data, 8 * ndims)))
    raise NotValid(f"shape representation tag {tag}")


def _values(raw: bytes, dtype: DType, count: int) -> list:
    values = list(struct.unpack(f"<{count}{dtype.struct}", raw))
    return [v if not isinstance(v, float) or v == v else None for v in values]  # NaN is not JSON


def _tensor(reader: _Reader, tensor: int) -> OpInput:
    lay = reader.layout
    ts = lay["tensor_shape"]
    shape_at = tensor + lay.offset("tensor", "shape")
    shape = reader.bytes(shape_at, 16)
    (num_elements,) = struct.unpack("<q", reader.bytes(shape_at + int(ts["num_elements"]), 8))
    dtype_number, ndims, tag = shape[int(ts["dtype_byte"])], shape[int(ts["ndims_byte"])], shape[int(ts["tag_byte"])]
    dtype = dtypes().get(dtype_number)
    if dtype is None:
        raise NotValid(f"dtype number {dtype_number} is no TensorFlow dtype")
    if ndims > MAX_RANK:
        raise NotValid(f"rank {ndims}")
    dims = _dims(reader, shape, tag, ndims)
    product = 1
    for d in dims:
        if d < 0:
            raise NotValid("a negative dimension")
        product *= d
    if product != num_elements or not 0 <= num_elements < MAX_ELEMENTS:
        raise NotValid(f"shape {dims} does not hold {num_elements} elements")
    value = None
    buffer = reader.u64(tensor + lay.offset("tensor", "buffer"))
    if num_elements and dtype.size:
        if not buffer:
            raise NotValid("a tensor with elements and no buffer")
        data = reader.u64(buffer + lay.offset("tensor_buffer", "data"))
        needed = num_elements * dtype.size
        # The buffer must hold the bytes the dtype and shape need: its last byte is in the core.
        if not data or reader.process.read(data + needed - 1, 1) is None:
            raise NotValid(f"the {dtype.name}{dims} tensor's {needed} bytes are not in the core")
        if dtype.struct and num_elements <= VALUE_ELEMENTS:
            value = _values(reader.bytes(data, needed), dtype, num_elements)
    return OpInput(dtype=dtype.name, shape=dims, value=value)


def _inputs(reader: _Reader, params: int) -> list[OpInput]:
    lay = reader.layout
    pointer, count = reader.view(params + lay.offset("params", "inputs"), "span")
    if count > MAX_INPUTS or (count and not pointer):
        raise NotValid(f"{count} inputs")
    step, tensor_at = lay.offset("tensor_value", "size"), lay.offset("tensor_value", "tensor")
    inputs = []
    for i in range(count):
        tensor = reader.u64(pointer + i * step + tensor_at)
        inputs.append(_tensor(reader, tensor) if tensor else OpInput())
    return inputs


def read_instance(process: Process, reader_layout: Layout, found: KernelFrame, thread: Thread, names: CodeNames,
                  candidates: list[int] | None = None) -> OpInstance:
    """The op instance under one layout; raises NotValid when anything does not hold together."""
    reader = _Reader(process, reader_layout)
    if candidates is None:
        candidates = pointer_words(process, thread)
    kernel, params_candidates = _find_kernel(reader, found, names, candidates)
    params, inputs = _params_inputs(reader, params_candidates)
    lay = reader_layout
    node = reader.text(*reader.view(kernel + lay.offset("op_kernel", "name_view"), "string_view"), "node name")
    op = reader.text(*reader.view(kernel + lay.offset("op_kernel", "type_string_view"), "string_view"), "op type")
    if not OP_TYPE.match(op):
        raise NotValid(f"op type {op!r} is not an op name")
    instance = OpInstance(
        framework="tensorflow",
        node=node,
        op=op,
        device=_device_name(reader, params),
        inputs=inputs,
        kernel=found.kernel_class,
        layout=reader_layout.name,
    )
    instance.reproducer = _reproducer(reader, kernel, instance, found, thread, names)
    return instance


def _reproducer(reader: _Reader, kernel: int, instance: OpInstance, found: KernelFrame, thread: Thread,
                names: CodeNames) -> str | None:
    """The raw-op snippet for a TensorFlow op (a custom op's library is not in tf.raw_ops)."""
    module = names.module_at(found.frame.pc) if found.frame.pc is not None else None
    if module is None or not os.path.basename(module.path).startswith(TENSORFLOW_KERNEL_LIBRARIES):
        return None
    graph = any(GRAPH_EXECUTOR in (f.function or "") for f in thread.frames)
    try:
        return reproducer(instance, NodeDefReader(reader).read(kernel), graph=graph)
    except (NotValid, Unreadable, NoReproducer):
        return None


def read_tensorflow_op(process: Process, thread: Thread, layouts: list[Layout], kernel: Frame | None = None,
                       kernel_at: int | None = None) -> Reading | None:
    """The op instance of the thread's kernel frame; None when no kernel was running.
    kernel, kernel_at: the op's frame read from the stack's memory, and where its return address
    lies (its OpKernelContext is looked for in the words around it), when the thread's frames
    hold no kernel frame."""
    names = CodeNames(process.modules, process)
    found = kernel_frame(thread)
    near = None
    if found is None and kernel is not None:
        found = kernel_frame(Thread(tid=thread.tid, frames=[kernel]))
        near = kernel
    if found is None:
        return None
    if not layouts:
        return Reading(None, "no layout data for this TensorFlow version")
    candidates = pointer_words(process, thread) if near is None or kernel_at is None else words_near(process, kernel_at, thread)
    problems, readings = [], []
    for layout in layouts:
        try:
            readings.append(read_instance(process, layout, found, thread, names, candidates))
        except NotValid as e:
            problems.append(f"{layout.name}: {e}")
    # Without the version's own layout every layout is tried: they must agree on what they read.
    if len({(r.node, r.op, repr(r.inputs)) for r in readings}) > 1:
        return Reading(None, "layouts of different TensorFlow versions read different instances: " +
                       ", ".join(r.layout or "?" for r in readings))
    if readings:
        return Reading(readings[0])
    return Reading(None, "; ".join(problems))
