"""The TFLite node being run when the process died, read through TFLite's C ABI structs.

1. The node's registration: a word of the crashing thread's registers or stack that points at
   a TfLiteRegistration (or at the node paired with it) whose invoke (or prepare) is the very
   function of a frame above the interpreter's Subgraph frames (the symbol tables name it),
   with a builtin code and version in range: the registration of the kernel that was running.
2. Its node: the TfLiteNode right before it in the Subgraph's vector of (node, registration)
   pairs. The TfLiteContext (found among the same words) must hold that vector in its
   Subgraph (impl_): that gives the node's index and proves the node is one of this
   interpreter's.
3. Its tensors: TfLiteContext.tensors[i] for the node's input and output indices: type, shape,
   quantization, allocation type, the buffer's byte count against what the shape needs.

A model loaded from a file (`Interpreter(model_path=...)`) is mapped read-only: its tensor
names and weights are in that file, not in the core. They are read from the file when it is
reachable and checks out (coreanalyze.process.filebacked); a name that cannot be read leaves the rest
of the instance standing, and `missing` says which field and why.
"""

from __future__ import annotations

import struct

from coreanalyze.base.model import OpInput, OpInstance, Thread
from coreanalyze.opinstance.codenames import CodeNames
from coreanalyze.opinstance.layouts import Layout, tflite_builtin_ops
from coreanalyze.opinstance.stackwords import pointer_words
from coreanalyze.opinstance.tensorflow import VALUE_ELEMENTS, NotValid, Reading
from coreanalyze.process.filebacked import DATA_FILES, FileBackedMemory
from coreanalyze.process.process import Process

INTERPRETER_FRAME = "tflite::Subgraph::"
MAX_TENSORS = 1 << 20
MAX_NODE_TENSORS = 1024
MAX_RANK = 16
MAX_VERSION = 1000
MAX_BUILTIN_CODE = 4096
SUBGRAPH_SCAN = 4096  # bytes of the Subgraph object searched for its node vector
VALUE_CODES = {"float32": "f", "int32": "i", "uint8": "B", "int64": "q", "bool": "?", "int16": "h", "int8": "b",
               "float16": "e", "float64": "d", "uint64": "Q", "uint32": "I", "uint16": "H"}


def _kernel_functions(thread: Thread, names: CodeNames) -> set[int]:
    """Start addresses of the functions above the interpreter's frames (the running kernel's)."""
    if not any(INTERPRETER_FRAME in (f.function or "") for f in thread.frames):
        return set()
    starts = set()
    for frame in thread.frames:
        if INTERPRETER_FRAME in (frame.function or ""):
            break
        if frame.kind != "native" or frame.pc is None:
            continue
        if frame.offset is not None:
            starts.add(frame.pc - frame.offset)
        found = names.function_at(frame.pc if frame.index == 0 else frame.pc - 1)
        if found is not None and found[1] is not None:
            starts.add(found[1])
    return starts


class _Reader:
    def __init__(self, process: Process, layout: Layout, names: CodeNames, files: FileBackedMemory | None = None):
        self.process = process
        self.layout = layout
        self.names = names
        self.files = files  # file-backed memory the core left out (a model loaded from a file)
        self.missing: list[str] = []  # fields left out of the instance, each with why
        self.files_used: dict[str, str] = {}  # mapped path -> how its identity was checked

    def at(self, group: str, name: str) -> int:
        return self.layout.offset(group, name)

    def bytes(self, address: int, size: int) -> bytes:
        data = self.process.read(address, size)
        if data is None:
            raise NotValid(f"{size} bytes at 0x{address:x} are not in the core")
        return data

    def mapped(self, address: int, size: int) -> bytes | None:
        """Bytes the core holds, else those of the file mapped there (when it checks out)."""
        data = self.process.read(address, size)
        if data is None and self.files is not None:
            data = self.files.read(address, size)
            if data is not None:
                self._used(address)
        return data

    def _used(self, address: int) -> None:
        path, backing = self.files.backing(address)
        self.files_used[path] = backing.checked

    def _absent(self, address: int, what: str) -> str:
        """Why `what` at address could not be read."""
        backing = self.files.backing(address) if self.files is not None else None
        if backing is None:
            return f"{what} is not in the core"
        path, found = backing
        return f"{what} is in the mapped file {path}, not in the core: {found.why_not or 'unreadable there'}"

    def u64(self, address: int) -> int:
        return struct.unpack("<Q", self.bytes(address, 8))[0]

    def i32(self, address: int) -> int:
        return struct.unpack("<i", self.bytes(address, 4))[0]

    def int_array(self, address: int, limit: int) -> list[int]:
        if not address:
            return []
        size = self.i32(address + self.at("int_array", "size"))
        if not 0 <= size <= limit:
            raise NotValid(f"an int array of {size} entries")
        return list(struct.unpack(f"<{size}i", self.bytes(address + self.at("int_array", "data"), 4 * size)))

    def cstring(self, address: int, what: str) -> str | None:
        if not address:
            return None
        raw = self.process.read_cstring(address, 1024)
        if raw is None:
            raw = self.names.file_cstring(address)  # a string literal of a library
        if raw is None and self.files is not None:
            raw = self.files.cstring(address, 1024)  # a model's string, in the mapped model file
            if raw is not None:
                self._used(address)
        if raw is None:
            raise NotValid(self._absent(address, what))
        text = raw.decode("utf-8", "replace")
        if not text.isprintable():
            raise NotValid(f"{what} is not printable")
        return text


def _registration(reader: _Reader, candidate: int, kernels: set[int]) -> bool:
    # From the core alone: a registration's function pointers are relocated at load (a builtin
    # op's is static data of the library), the file's bytes are not the process's.
    r = reader.process.read_core(candidate, reader.at("registration", "size"))
    if r is None:
        return False
    invoke = struct.unpack_from("<Q", r, reader.at("registration", "invoke"))[0]
    prepare = struct.unpack_from("<Q", r, reader.at("registration", "prepare"))[0]
    if invoke not in kernels and prepare not in kernels:
        return False
    code = struct.unpack_from("<i", r, reader.at("registration", "builtin_code"))[0]
    version = struct.unpack_from("<i", r, reader.at("registration", "version"))[0]
    return 0 <= code < MAX_BUILTIN_CODE and 0 < version < MAX_VERSION


def _node_index(reader: _Reader, subgraph: int, node: int) -> int | None:
    """The node's index in the Subgraph's vector of (node, registration) pairs, else None."""
    pair = reader.at("node_and_registration", "size")
    words = reader.process.read_available(subgraph, SUBGRAPH_SCAN)
    values = [v for (v,) in struct.iter_unpack("<Q", words[: len(words) // 8 * 8])]
    for i in range(len(values) - 2):
        begin, end, capacity = values[i:i + 3]
        if begin <= node < end <= capacity and (node - begin) % pair == 0 and (end - begin) % pair == 0:
            return (node - begin) // pair
    return None


def _owns_tensors(reader: _Reader, subgraph: int, tensors: int, count: int) -> bool:
    """Whether the Subgraph's own tensor vector is `count` tensors at `tensors`: the context it
    embeds points there, while a stale copy of a context points at a buffer since reallocated."""
    words = reader.process.read_available(subgraph, SUBGRAPH_SCAN)
    values = [v for (v,) in struct.iter_unpack("<Q", words[: len(words) // 8 * 8])]
    end = tensors + count * reader.at("tensor", "size")
    return any(values[i] == tensors and values[i + 1] == end and values[i + 2] >= end for i in range(len(values) - 2))


def _context(reader: _Reader, candidates: list[int], node: int) -> tuple[int, int, int]:
    """(tensors, tensors_size, node index) of the TfLiteContext whose Subgraph holds the node."""
    found = {}
    current = {}
    for candidate in candidates:
        data = reader.process.read(candidate, 32)
        if data is None:
            continue
        size = struct.unpack_from("<Q", data, reader.at("context", "tensors_size"))[0]
        tensors = struct.unpack_from("<Q", data, reader.at("context", "tensors"))[0]
        impl = struct.unpack_from("<Q", data, reader.at("context", "impl"))[0]
        if not 0 < size <= MAX_TENSORS or not tensors or not impl or not reader.process.is_present(impl):
            continue
        index = _node_index(reader, impl, node)
        if index is not None:
            found[(tensors, size)] = index
            if _owns_tensors(reader, impl, tensors, size):
                current[(tensors, size)] = index
    if len(found) > 1 and len(current) == 1:
        found = current  # the others are stale copies of the same context
    if len(found) != 1:
        raise NotValid("no TfLiteContext holds the node" if not found else "several TfLiteContexts hold the node")
    (tensors, size), index = next(iter(found.items()))
    return tensors, size, index


def _tensor(reader: _Reader, tensors: int, count: int, index: int, with_value: bool = True) -> OpInput:
    """Tensor `index` of the context; with_value: its elements too (an output has none yet)."""
    if index < 0:
        return OpInput(index=index)  # an optional input left out (-1)
    if index >= count:
        raise NotValid(f"tensor index {index} of {count}")
    lay = reader.layout
    at = tensors + index * reader.at("tensor", "size")
    raw = reader.bytes(at, reader.at("tensor", "size"))

    def field(fmt: str, name: str):
        return struct.unpack_from(fmt, raw, reader.at("tensor", name))[0]

    type_entry = lay.tables.get("types", {}).get(str(field("<i", "type")))
    if type_entry is None:
        raise NotValid(f"tensor {index} has no known type")
    dtype, element = str(type_entry[0]), int(type_entry[1])
    dims = reader.int_array(field("<Q", "dims"), MAX_RANK)
    if any(d < 0 for d in dims):
        raise NotValid(f"tensor {index} has a negative dimension")
    elements = 1
    for d in dims:
        elements *= d
    allocation = lay.tables.get("allocation_types", {}).get(str(field("<i", "allocation_type")))
    if allocation is None:
        raise NotValid(f"tensor {index} has no known allocation type")
    try:
        name = reader.cstring(field("<Q", "name"), f"tensor {index}'s name")
    except NotValid as e:
        name = None  # the rest of the tensor stands; the instance says what is missing
        reader.missing.append(str(e))
    item = OpInput(
        dtype=dtype,
        shape=dims,
        name=name,
        index=index,
        scale=field("<f", "scale"),
        zero_point=field("<i", "zero_point"),
        allocation=str(allocation),
        bytes=field("<Q", "bytes"),
        needed_bytes=elements * element if element else None,
    )
    data = field("<Q", "data")
    code = VALUE_CODES.get(dtype)
    if with_value and code and data and 0 < elements <= VALUE_ELEMENTS and item.bytes >= elements * element:
        values = reader.mapped(data, elements * element)  # weights of a mapped model: its file
        if values is not None:
            item.value = [v if v == v else None for v in struct.unpack(f"<{elements}{code}", values)]
    return item


def _delegate(reader: _Reader, node: int, custom_name: str | None, names: CodeNames) -> str | None:
    delegate = reader.u64(node + reader.at("node", "delegate"))
    if not delegate:
        return None
    words = {str(k): str(v) for k, v in reader.layout.tables.get("delegates", {}).items()}
    prepare = reader.process.read_u64(delegate + reader.at("delegate", "prepare"))
    named = names.function_at(prepare) if prepare else None
    for text in (custom_name or "", named[0] if named else ""):
        for word, delegate_name in words.items():
            if word in text.lower():
                return delegate_name
    return f"custom ({custom_name})" if custom_name else "custom"


def read_tflite_node(process: Process, thread: Thread, layouts: list[Layout]) -> Reading | None:
    """The TFLite node of the crashing thread; None when no TFLite kernel was running. What the
    core left out of a model loaded from a path is read from the process's data files tier
    (coreanalyze.process.filebacked.data_files), where one is registered."""
    names = CodeNames(process.modules, process)
    files = process.tier(DATA_FILES)
    files = files if isinstance(files, FileBackedMemory) else None
    kernels = _kernel_functions(thread, names)
    if not kernels:
        return None
    candidates = pointer_words(process, thread)
    problems = []
    for layout in layouts:
        try:
            return Reading(_read(_Reader(process, layout, names, files), candidates, kernels, names))
        except NotValid as e:
            problems.append(f"{layout.name}: {e}")
    return Reading(None, "; ".join(problems) or "no TFLite layout data")


def _read(reader: _Reader, candidates: list[int], kernels: set[int], names: CodeNames) -> OpInstance:
    offset = reader.at("node_and_registration", "registration")
    nodes = {}
    # A word points at the registration, or at its node (the pair's start: aarch64 code keeps
    # the node in a register and addresses the registration from it).
    for candidate in candidates:
        for registration in (candidate, candidate + offset):
            node = registration - offset
            if _registration(reader, registration, kernels) and reader.process.is_present(node):
                nodes[node] = registration
    if not nodes:
        raise NotValid("no TfLiteRegistration on the stack runs the crashing kernel")
    results = []
    for node, registration in nodes.items():
        try:
            results.append(_instance(reader, candidates, node, registration, names))
        except NotValid as e:
            last = e
    if not results:
        raise last
    if len({(r.node_index, r.op) for r in results}) > 1:
        raise NotValid("several TFLite nodes of the crashing kernel are reachable from the stack")
    return results[0]


def _instance(reader: _Reader, candidates: list[int], node: int, registration: int, names: CodeNames) -> OpInstance:
    tensors, count, index = _context(reader, candidates, node)
    inputs = reader.int_array(reader.u64(node + reader.at("node", "inputs")), MAX_NODE_TENSORS)
    outputs = reader.int_array(reader.u64(node + reader.at("node", "outputs")), MAX_NODE_TENSORS)
    code = reader.i32(registration + reader.at("registration", "builtin_code"))
    try:
        custom_name = reader.cstring(reader.u64(registration + reader.at("registration", "custom_name")), "custom op name")
    except NotValid as e:
        custom_name = None
        reader.missing.append(str(e))
    op = custom_name or tflite_builtin_ops().get(code)
    if op is None:
        raise NotValid(f"builtin code {code} is no TFLite builtin op")
    output_tensors = [_tensor(reader, tensors, count, i, with_value=False) for i in outputs]
    return OpInstance(
        framework="tflite",
        node=next((t.name for t in output_tensors if t.name), None) or f"#{index}",
        op=op,
        inputs=[_tensor(reader, tensors, count, i) for i in inputs],
        outputs=output_tensors,
        node_index=index,
        version=reader.i32(registration + reader.at("registration", "version")),
        delegate=_delegate(reader, node, custom_name, names),
        layout=reader.layout.name,
        missing=list(reader.missing),
        read_from_files=dict(reader.files_used),
    )
