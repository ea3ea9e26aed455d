"""The byte-level readers behind the op read from stack memory: which words are return addresses
(coreanalyze.process.stackscan) and which function of a JIT's in-memory object holds a pc
(coreanalyze.process.jitcode), on a real relocatable object made by the compiler here."""

from __future__ import annotations

import struct
import subprocess
from types import SimpleNamespace

import pytest
from support.require import require

from coreanalyze.process.jitcode import function_in_object, object_size
from coreanalyze.process.stackscan import looks_like_call, stack_start


@pytest.mark.parametrize(
    "before",
    [
        bytes.fromhex("90 90 e8 10 20 30 40"),  # call rel32
        bytes.fromhex("90 90 90 90 90 ff d0"),  # call rax
        bytes.fromhex("90 90 90 90 41 ff d4"),  # call r12
        bytes.fromhex("90 90 90 90 ff 50 08"),  # call [rax+8]
        bytes.fromhex("90 ff 15 00 10 00 00"),  # call [rip+0x1000]
        bytes.fromhex("ff 90 f8 00 00 00"),  # too short: never a call
    ],
)
def test_call_instructions_before_a_return_address(before):
    assert looks_like_call(before) is (len(before) == 7)


@pytest.mark.parametrize("before", [bytes(7), bytes.fromhex("48 89 c7 e8 00 00 00"), bytes.fromhex("90 90 90 90 ff e0 90")])
def test_other_bytes_are_no_call(before):
    # zeros; a rel32 call one byte off; `jmp rax` (ff /4)
    assert not looks_like_call(before)


def test_an_overflowed_stack_is_read_from_its_mapping():
    stack = SimpleNamespace(start=0x7FFD0000, end=0x7FFD8000)
    memory = SimpleNamespace(segments=[stack], segment_containing=lambda a: stack if stack.start <= a < stack.end else None)
    assert stack_start(memory, stack.start + 16) == stack.start + 16
    assert stack_start(memory, stack.start - 16) == stack.start  # in the guard gap
    assert stack_start(memory, stack.start - (4 << 20)) is None  # nowhere near a stack


def _section_headers(blob: bytes):
    shoff, = struct.unpack_from("<Q", blob, 40)
    shnum, shstrndx = struct.unpack_from("<HH", blob, 60)
    return shoff, [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + 64 * i) for i in range(shnum)]


def test_the_function_of_a_jit_object_loaded_in_memory(tmp_path):
    """What an ORC JIT keeps for the debugger: the compiled object with its sections' load
    addresses written into the section headers. Made here by the compiler, loaded by hand."""
    cc = require("gcc")
    source = tmp_path / "kernel.c"
    source.write_text("int first(int x) { return x + 1; }\nint fused_kernel(int *p) { return p[3] * 7; }\n")
    obj = tmp_path / "kernel.o"
    subprocess.run([cc, "-O1", "-c", "-fno-asynchronous-unwind-tables", str(source), "-o", str(obj)], check=True)
    blob = bytearray(obj.read_bytes())
    assert object_size(bytes(blob[:64])) == len(blob)
    shoff, sections = _section_headers(bytes(blob))
    load = 0x7F0012340000
    text = next(i for i, s in enumerate(sections) if s[2] & 0x4 and s[5])
    struct.pack_into("<Q", blob, shoff + 64 * text + 16, load)  # sh_addr, as the JIT's loader writes it
    name, module, start = function_in_object(bytes(blob), load + sections[text][5] - 1)
    assert name == "fused_kernel"
    assert module == "kernel.c"  # the FILE symbol: XLA's is the LLVM module's name
    assert start is not None and start <= load + sections[text][5] - 1
    assert function_in_object(bytes(blob), load + sections[text][5] + 4096) is None
    assert function_in_object(bytes(blob[:32]), load) is None
