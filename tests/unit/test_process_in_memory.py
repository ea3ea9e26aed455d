"""The readers of a process on a Process made in memory (Process.in_memory): the bytes and
symbols are the test's, so each reader's logic is tested without a kernel core. That the
readers read real cores right is tested on real cores (tests/integration)."""

from __future__ import annotations

import struct

from coreanalyze.base.model import Frame, Report, SignalInfo, Thread
from coreanalyze.classify.abortmsg import find_abort_message
from coreanalyze.corefile.structures import Mapping, ThreadNotes
from coreanalyze.hang.rules import hang_rules
from coreanalyze.hang.verdict import hang_classification
from coreanalyze.opinstance.codenames import CodeNames
from coreanalyze.opinstance.layouts import layouts_for
from coreanalyze.opinstance.tflite import read_tflite_node
from coreanalyze.process.process import Process

STACK = 0x7FFD0000
HEAP = 0x5600000
DATA = 0x404000
CODE = 0x401000
FUTEX = 202  # x86_64's futex system call


def u64(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}Q", *values)


# -- the Process itself ---------------------------------------------------------------------


def test_memory_tiers_answer_in_the_order_registered_and_a_recorder_hears_the_core_reads():
    process = Process.in_memory({HEAP: b"core" + bytes(12)})

    class Files:
        def read(self, address: int, size: int) -> bytes | None:
            return b"F" * size if address >= HEAP + 16 else None

    process.add_memory_tier("files", Files())
    process.add_memory_tier("aside", Files(), default=False)
    assert process.read(HEAP, 4) == b"core"  # the core first
    assert process.read(HEAP + 16, 2) == b"FF"  # then the next tier, where the core has nothing
    assert process.read(HEAP - 8, 2) is None
    assert process.tier("aside") is not None and process.tier("nothing") is None
    heard: list[tuple[int, int]] = []
    with process.record(lambda address, size: heard.append((address, size))):
        assert process.recording
        process.read(HEAP, 4)
        process.read_cstring(HEAP)
    process.read(HEAP, 4)
    assert heard[0] == (HEAP, 4) and len(heard) >= 2 and not process.recording


def test_a_read_falls_back_to_the_crashed_builds_file_where_the_core_lacks_bytes_and_a_core_only_read_does_not(tmp_path):
    from types import SimpleNamespace

    # A library mapped at CODE whose first page the core kept and whose read-only data (a
    # string literal at CODE + 0x1000) it did not: the file of the same build has it.
    library = tmp_path / "libwork.so"
    library.write_bytes(b"\x7fELF" + bytes(0x1000 - 4) + b"a literal\0" + bytes(0x1000 - 10))
    process = Process.in_memory(
        {CODE: b"\x7fELF" + bytes(0x1000 - 4)},
        mappings=[Mapping(start=CODE, end=CODE + 0x2000, file_offset=0, path="/lib/libwork.so")],
    )
    literal = CODE + 0x1000
    assert process.read(literal, 9) is None  # no module table yet: the core alone
    process.set_modules([SimpleNamespace(path="/lib/libwork.so", local_path=str(library), status="ok")])
    assert process.read(literal, 9) == b"a literal"
    assert process.read_cstring(literal) == b"a literal"
    assert process.read_available(literal, 4) == b"a li"
    assert process.read_u64(literal) == struct.unpack("<Q", b"a litera")[0]
    assert process.read_core(literal, 9) is None
    assert process.read_cstring(literal, core_only=True) is None
    assert process.read_available(literal, 4, core_only=True) == b""
    assert process.read_u64(literal, core_only=True) is None
    assert not process.is_present(literal)  # what the core holds: the file adds no segment
    assert process.read(CODE, 4) == process.read_core(CODE, 4) == b"\x7fELF"  # the core first
    # A file of another build is never read.
    process.set_modules([SimpleNamespace(path="/lib/libwork.so", local_path=str(library), status="mismatch")])
    assert process.read(literal, 9) is None


def test_symbols_name_addresses_and_addresses_of_names():
    process = Process.in_memory({}, symbols={"work": (CODE, 0x40), "accounts_lock": (DATA, 40)})
    assert process.symbol_address("accounts_lock") == DATA
    found = process.symbol_at(CODE + 0x10)
    assert found is not None and (found.name, found.start) == ("work", CODE)
    assert process.symbol_at(CODE + 0x40) is None
    assert CodeNames([], process).function_at(CODE + 1) == ("work", CODE)


# -- the abort message ------------------------------------------------------------------------


def test_the_abort_message_is_read_from_the_crashing_threads_stack():
    line = b"F0000 00:00:1700000000.000000   12345 tensor_shape.cc:360] Check failed: d < dims() (1 vs. 1)\n"
    stack = bytearray(0x4000)
    stack[0x1000 : 0x1000 + len(line)] = line
    process = Process.in_memory(
        {STACK: bytes(stack)},
        threads=[ThreadNotes(7, {"rsp": STACK + 0x800, "rip": CODE})],
        signal=SignalInfo(number=6, name="SIGABRT"),
    )
    message = find_abort_message(process, process.stack_pointer(), process.signal)
    assert message is not None and message.startswith("F0000") and "Check failed: d < dims() (1 vs. 1)" in message


def test_no_message_in_memory_is_none():
    process = Process.in_memory({STACK: bytes(0x2000)}, threads=[ThreadNotes(7, {"rsp": STACK + 0x800})])
    assert find_abort_message(process, process.stack_pointer(), SignalInfo(number=6, name="SIGABRT")) is None


# -- the hang readers -------------------------------------------------------------------------


def _mutex(owner: int) -> bytes:
    return struct.pack("<iIi", 2, 0, owner) + bytes(28)  # locked with waiters, __owner


def test_a_deadlock_of_two_global_mutexes_is_found_and_its_locks_named():
    accounts, ledger = DATA, DATA + 0x40
    process = Process.in_memory(
        {DATA: _mutex(12) + bytes(24) + _mutex(11) + bytes(24)},
        symbols={"accounts_lock": (accounts, 40), "ledger_lock": (ledger, 40)},
        threads=[ThreadNotes(11, {"orig_rax": FUTEX, "rdi": accounts}), ThreadNotes(12, {"orig_rax": FUTEX, "rdi": ledger})],
    )
    waiting = ["__lll_lock_wait", "___pthread_mutex_lock", "transfer", "start_thread"]
    threads = [Thread(tid=tid, frames=[Frame(index=i, function=f) for i, f in enumerate(waiting)]) for tid in (11, 12)]
    classification = hang_classification(Report(threads=threads), process, "a snapshot", hang_rules())
    hang = classification.hang
    assert hang is not None and sorted((s.tid, s.waits_for) for s in hang.deadlock) == [(11, 12), (12, 11)]
    assert {s.wants for s in hang.deadlock} == {"mutex accounts_lock (0x404000)", "mutex ledger_lock (0x404040)"}
    names = {w.tid: (w.state, w.owner, w.object_name) for w in hang.threads}
    assert names == {11: ("mutex", 12, "accounts_lock"), 12: ("mutex", 11, "ledger_lock")}


def test_a_lock_inside_a_variable_is_named_with_its_offset():
    process = Process.in_memory({DATA: _mutex(0) * 2}, symbols={"table": (DATA, 80)})
    from coreanalyze.hang.locknames import lock_symbol

    assert lock_symbol(DATA, process) == "table"
    assert lock_symbol(DATA + 0x28, process) == "table+0x28"
    assert lock_symbol(DATA + 0x100, process) is None and lock_symbol(DATA, None) is None


# -- the op-instance reader (TFLite's C ABI structs) ------------------------------------------


def _int_array(values: list[int]) -> bytes:
    data = struct.pack(f"<i{len(values)}i", len(values), *values)
    return data + bytes(-len(data) % 8)


def _tflite_process() -> tuple[Process, Thread]:
    """One ADD node of a TFLite subgraph, float32[2] + float32[2] -> float32[2] named "sum",
    laid out as tflite.toml says, reachable from the crashing thread's stack."""
    lay = layouts_for("tflite", "2.21")[0]
    tensor_size = lay.offset("tensor", "size")
    eval_function = CODE + 0x200
    heap = bytearray(0x1000)
    at = {"tensors": 0x100, "nodes": 0x400, "subgraph": 0x600, "context": 0x700, "names": 0x800, "arrays": 0x900, "data": 0xA00}

    def put(offset: int, data: bytes) -> None:
        heap[offset : offset + len(data)] = data

    arrays = at["arrays"]
    dims, inputs, outputs = arrays, arrays + 16, arrays + 32
    put(dims, _int_array([2]))
    put(inputs, _int_array([0, 1]))
    put(outputs, _int_array([2]))
    put(at["names"], b"x\0y\0sum\0")
    names = [HEAP + at["names"], HEAP + at["names"] + 2, HEAP + at["names"] + 4]
    put(at["data"], struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
    values = [HEAP + at["data"], HEAP + at["data"] + 8, 0]
    for i in range(3):
        t = at["tensors"] + i * tensor_size
        put(t + lay.offset("tensor", "type"), struct.pack("<i", 1))  # float32
        put(t + lay.offset("tensor", "data"), u64(values[i]))
        put(t + lay.offset("tensor", "dims"), u64(HEAP + dims))
        put(t + lay.offset("tensor", "allocation_type"), struct.pack("<i", 2))  # arena-rw
        put(t + lay.offset("tensor", "bytes"), u64(8))
        put(t + lay.offset("tensor", "name"), u64(names[i]))
    node = at["nodes"]
    put(node + lay.offset("node", "inputs"), u64(HEAP + inputs))
    put(node + lay.offset("node", "outputs"), u64(HEAP + outputs))
    registration = node + lay.offset("node_and_registration", "registration")
    put(registration + lay.offset("registration", "invoke"), u64(eval_function))
    put(registration + lay.offset("registration", "builtin_code"), struct.pack("<i", 0))  # ADD
    put(registration + lay.offset("registration", "version"), struct.pack("<i", 1))
    pair = lay.offset("node_and_registration", "size")
    tensors_end = HEAP + at["tensors"] + 3 * tensor_size
    # The Subgraph: its vector of (node, registration) pairs and its vector of tensors.
    put(at["subgraph"], u64(HEAP + node, HEAP + node + pair, HEAP + node + pair, HEAP + at["tensors"], tensors_end, tensors_end))
    context = at["context"]
    put(context + lay.offset("context", "tensors_size"), u64(3))
    put(context + lay.offset("context", "tensors"), u64(HEAP + at["tensors"]))
    put(context + lay.offset("context", "impl"), u64(HEAP + at["subgraph"]))
    stack = u64(0, HEAP + context, HEAP + registration, 0) + bytes(0x100)
    process = Process.in_memory(
        {HEAP: bytes(heap), STACK: stack},
        symbols={"_ZN6tflite3ops7builtin3add4EvalEP13TfLiteContextP10TfLiteNode": (eval_function, 0x80)},
        threads=[ThreadNotes(7, {"rsp": STACK})],
    )
    frames = [
        Frame(index=0, pc=eval_function + 0x10, function="tflite::ops::builtin::add::Eval(TfLiteContext*, TfLiteNode*)"),
        Frame(index=1, pc=CODE + 0x30, function="tflite::Subgraph::Invoke()"),
    ]
    return process, Thread(tid=7, frames=frames, registers={"rsp": STACK}, crashed=True)


def test_the_tflite_node_is_read_from_the_stack_through_the_processes_symbols():
    process, thread = _tflite_process()
    reading = read_tflite_node(process, thread, layouts_for("tflite", "2.21"))
    assert reading is not None and reading.instance is not None, reading and reading.problem
    instance = reading.instance
    assert (instance.op, instance.node, instance.node_index, instance.version) == ("ADD", "sum", 0, 1)
    assert [(i.name, i.dtype, i.shape, i.value) for i in instance.inputs] == [
        ("x", "float32", [2], [1.0, 2.0]),
        ("y", "float32", [2], [3.0, 4.0]),
    ]
    assert [(o.name, o.value) for o in instance.outputs] == [("sum", None)]


def test_without_a_symbol_for_the_kernel_no_node_is_read():
    process, thread = _tflite_process()
    thread.frames[0].function = "tflite::Subgraph::Invoke()"  # no kernel above the interpreter
    assert read_tflite_node(process, thread, layouts_for("tflite", "2.21")) is None


# -- the environment when the process died ----------------------------------------------------


def _environ_process(strings: list[bytes], **fields) -> Process:
    """libc's `__environ` at DATA pointing to an array on the heap of the given strings, as
    setenv leaves it; the initial block (the notes' environ) is the test's fields."""
    at, blob, pointers = HEAP + 0x400, b"", []
    for text in strings:
        pointers.append(at + len(blob))
        blob += text + b"\0"
    heap = u64(*pointers, 0).ljust(0x400, b"\0") + blob
    return Process.in_memory({DATA: u64(HEAP), HEAP: heap}, symbols={"__environ": (DATA, 8)}, **fields)


def test_the_current_environment_is_libcs_array_and_the_job_is_read_from_it():
    from coreanalyze.jobs.stage import add_job

    tf_config = b'TF_CONFIG={"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"type": "worker", "index": 1}}'
    current = [b"PATH=/bin", b"PYTEST_CURRENT_TEST=tests/test_model.py::test_forward (call)", tf_config, b"PATH=/shadowed"]
    process = _environ_process(current, environ={"PATH": "/bin", "DROPPED": "1"})
    environ = process.current_environment
    # What the process set itself is there; what it removed is not; getenv's first PATH wins.
    assert environ["PYTEST_CURRENT_TEST"] == "tests/test_model.py::test_forward (call)"
    assert environ["PATH"] == "/bin" and "DROPPED" not in environ and process.environ == {"PATH": "/bin", "DROPPED": "1"}
    report = Report()
    add_job(report, process)
    assert report.job is not None and (report.job.rank, report.job.world_size, report.job.role) == (1, 2, "worker")
    assert report.job.id.startswith("tf:")


def test_a_tf_config_the_task_removed_is_read_from_the_string_setenv_left():
    from coreanalyze.jobs.stage import add_job

    tf_config = b'TF_CONFIG={"cluster": {"worker": ["h0:2222", "h1:2222"]}, "task": {"type": "worker", "index": 0}}'
    # The environment no longer names it; the string setenv made is still on the heap.
    process = _environ_process([b"PATH=/bin", b"\x91\x00" + tf_config], environ={"PATH": "/bin"})
    assert "TF_CONFIG" not in process.current_environment
    agent = Thread(tid=8, frames=[Frame(index=0, function="tsl::CoordinationServiceAgent::StartSendingHeartbeats()")])
    report = Report(threads=[agent])
    add_job(report, process)
    assert report.job is not None and (report.job.rank, report.job.world_size, report.job.variables) == (0, 2, ["TF_CONFIG"])
    assert "setenv left in memory" in report.classification.evidence[-1]
    # A process that is no task of a TensorFlow job: its heap is not searched.
    plain = Report(threads=[Thread(tid=8, frames=[Frame(index=0, function="main")])])
    add_job(plain, process)
    assert plain.job is None


def test_without_environ_in_the_core_the_initial_environment_stands():
    cleared = Process.in_memory({DATA: u64(0)}, symbols={"__environ": (DATA, 8)}, environ={"RANK": "0"})
    assert cleared.current_environment == {}  # clearenv()
    unknown = Process.in_memory({}, symbols={}, environ={"RANK": "0"})
    assert unknown.current_environment == {"RANK": "0"}  # no symbol for environ: the initial block
    lost = Process.in_memory({DATA: u64(HEAP + 0x10000)}, symbols={"__environ": (DATA, 8)}, environ={"RANK": "0"})
    assert lost.current_environment == {"RANK": "0"}  # its array is not in the core
