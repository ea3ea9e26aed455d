"""The CPython frame walker: Python frames of every thread, read from a dead process's memory.

Debugger-neutral: everything it needs from the process comes through a `Target` (memory reads,
global symbol addresses, the names of the loaded files, type offsets from debug info, the
threads' LWPs). `gdb_scripts/pystacks.py` runs it inside gdb over gdb's view of the core;
`coreanalyze.python.coretarget` runs it in-process over the core file's own memory and the ELF
files it maps.

How the runtime is found without debug info: `_PyRuntime` and `Py_Version` are exported in
the dynamic symbol table of the executable or of libpython, even on stripped distribution
builds. From there interpreters -> thread states -> frames are walked with per-version
field offsets: CPython 3.13 and later describe them themselves in `_Py_DebugOffsets` (the first
member of `_PyRuntime`, whose field order differs per version and is tabled below), over a table
of every 3.13+ build, default and free-threaded, taken from CPython's headers; for 3.10-3.12 the
offsets of x86_64 release builds are tabled, and when the target can read the interpreter's
DWARF the offsets are derived from its types instead. 3.14 tags the references a frame holds
(`_PyStackRef`); a free-threaded build keeps a bytecode copy per thread and may run without
its GIL.

Everything read here comes from a dead, possibly corrupt process: every read is checked and
bounded, every loop has a limit and a cycle check, and nothing is ever executed in the
process (no calls, only memory reads). A broken structure ends that thread's walk with the
frames read so far and a warning.

This file is imported both as `coreanalyze.gdb_scripts.pywalker` and, inside gdb, as the
top-level module `pywalker`: it imports nothing from coreanalyze.
"""

from __future__ import annotations

import re
import struct
import time
from typing import NamedTuple, Protocol

FORMAT = "coreanalyze-pystacks/1"
COMMAND = "coreanalyze-pystacks"

# Limits: a corrupt core may make any count or length absurd.
MAX_INTERPRETERS = 64
MAX_THREADS = 4096
MAX_FRAMES = 1024
MAX_READ = 1 << 20  # bytes in one read
MAX_LINETABLE = 1 << 18  # bytes of one code object's line table
MAX_NAME_CHARS = 1024  # function names, file names
MAX_LOCALS = 256  # locals shown per frame
MAX_REPR = 120  # characters of one local's repr
MAX_READS = 2_000_000  # memory reads in one command
TIME_BUDGET = 60.0  # seconds for one command; the host's timeout is the real guard
# The unit of the walk's read cache: a page. The objects it reads lie scattered, but in the
# allocator's pools: the module names and namespaces of a TensorFlow process's sys.modules take
# ~2600 pages and ~5800 blocks of 256 bytes, each block one read of the core (a third slower).
# A target may ask for smaller blocks (its read_block): one whose reads are recorded, say.
CACHE_BLOCK = 4096
SHORT_TEXT = 64  # characters of a str read with its header in one read (unicode)
CACHE_BYTES = 16 << 20  # the most the cache holds
DEFAULT_LOCALS_FRAMES = 5
MAX_DICT_ENTRIES = 1 << 17  # entries of one dict (sys.modules, a module's namespace)
MAX_IMPORTS = 4096  # top-level modules reported
MAX_VERSION_CHARS = 64
INTERP_SCAN_BYTES = 16384  # how far into the interpreter state sys.modules is looked for

# _PyInterpreterFrame.owner: from this value up, a frame is the interpreter's own and runs no
# code object (3.12-3.13: FRAME_OWNED_BY_CSTACK = 3, the shim of an evaluation-loop activation;
# 3.14+: FRAME_OWNED_BY_INTERPRETER = 3, the shim and the thread's base frame, and
# FRAME_OWNED_BY_CSTACK = 4).
FIRST_SHIM_OWNER = 3
# A _PyStackRef (3.14+) is a pointer with its low two bits as tags, or, with both bits set, a
# small int shifted left by two (Include/internal/pycore_stackref.h).
STACKREF_TAG_BITS = 3
STACKREF_INT_TAG = 3
# co_localspluskinds bits (Include/internal/pycore_code.h, 3.11+).
CO_FAST_CELL = 0x40
CO_FAST_FREE = 0x80
# glibc's struct pthread keeps the kernel tid here on x86_64 (used to map 3.10's thread_id,
# a pthread_t, to an LWP; checked against the core's LWPs and recalibrated if it is wrong).
PTHREAD_TID_OFFSET_X86_64 = 720

# --------------------------------------------------------------------------- layouts
#
# Offsets for x86_64 release builds (no Py_DEBUG / Py_TRACE_REFS). Keys are "struct.field".
# Measured on the DWARF of CPython 3.10.13, 3.11.7 and 3.12.1 (interp.modules: where those
# interpreters' PyInterpreterState holds sys.modules; checked before use, and searched for
# when it does not check out); the 3.13 entries only back up
# fields that _Py_DebugOffsets does not describe.

_OBJECT_COMMON = {
    "object.type": 8,
    "var.size": 16,
    "type.name": 24,
    "type.basicsize": 32,
    "type.itemsize": 40,
    "type.flags": 168,
    "type.base": 256,
    "tuple.items": 24,
    "list.items": 24,
    "dict.used": 16,
    "dict.keys": 32,
    "dict.values": 40,
    "module.dict": 16,
    "float.value": 16,
    "bytes.sval": 32,
    "long.digits": 24,
    "cell.ref": 16,
    "unicode.length": 16,
    "unicode.state": 32,
}

TABLES: dict[tuple[int, int], dict[str, int]] = {
    (3, 10): {
        **_OBJECT_COMMON,
        "unicode.ascii_size": 48,
        "unicode.compact_size": 72,
        "unicode.data_any": 72,
        "runtime.interpreters_head": 32,
        "runtime.gil_holder": 360,
        "runtime.gil_locked": 368,
        "interp.next": 0,
        "interp.threads_head": 8,
        "interp.runtime": 16,
        "interp.id": 24,
        "interp.modules": 856,
        "tstate.next": 8,
        "tstate.interp": 16,
        "tstate.frame": 24,
        "tstate.thread_id": 176,
        "pyframe.back": 24,
        "pyframe.code": 32,
        "pyframe.lasti": 96,
        "pyframe.localsplus": 352,
        "code.argcount": 16,
        "code.nlocals": 28,
        "code.code": 48,
        "code.varnames": 72,
        "code.filename": 104,
        "code.name": 112,
        "code.firstlineno": 40,
        "code.linetable": 120,
    },
    (3, 11): {
        **_OBJECT_COMMON,
        "unicode.ascii_size": 48,
        "unicode.compact_size": 72,
        "unicode.data_any": 72,
        "runtime.interpreters_head": 40,
        "runtime.gil_holder": 368,
        "runtime.gil_locked": 376,
        "interp.next": 0,
        "interp.threads_head": 16,
        "interp.runtime": 40,
        "interp.id": 48,
        "interp.modules": 888,
        "tstate.next": 8,
        "tstate.interp": 16,
        "tstate.cframe": 56,
        "tstate.thread_id": 152,
        "tstate.native_thread_id": 160,
        "cframe.current_frame": 8,
        "iframe.code": 32,
        "iframe.previous": 48,
        "iframe.instr": 56,
        "iframe.is_entry": 68,
        "iframe.owner": 69,
        "iframe.localsplus": 72,
        "code.argcount": 56,
        "code.firstlineno": 72,
        "code.nlocalsplus": 76,
        "code.localsplusnames": 96,
        "code.localspluskinds": 104,
        "code.filename": 112,
        "code.name": 120,
        "code.qualname": 128,
        "code.linetable": 136,
        "code.code_adaptive": 184,
    },
    (3, 12): {
        **_OBJECT_COMMON,
        "unicode.ascii_size": 40,
        "unicode.compact_size": 56,
        "unicode.data_any": 56,
        "runtime.interpreters_head": 40,
        "interp.next": 0,
        "interp.threads_head": 72,
        "interp.runtime": 96,
        "interp.id": 8,
        "interp.gil_ptr": 384,
        "interp.modules": 944,
        "gil.holder": 8,
        "gil.locked": 16,
        "gil.size": 208,
        "tstate.next": 8,
        "tstate.interp": 16,
        "tstate.cframe": 56,
        "tstate.thread_id": 136,
        "tstate.native_thread_id": 144,
        "cframe.current_frame": 0,
        "iframe.code": 0,
        "iframe.previous": 8,
        "iframe.instr": 56,
        "iframe.owner": 70,
        "iframe.localsplus": 72,
        "code.argcount": 52,
        "code.firstlineno": 68,
        "code.nlocalsplus": 72,
        "code.localsplusnames": 96,
        "code.localspluskinds": 104,
        "code.filename": 112,
        "code.name": 120,
        "code.qualname": 128,
        "code.linetable": 136,
        "code.code_adaptive": 192,
    },
}

# 3.13 and later, default and free-threaded ("t") builds: every key the walk reads, from CPython's
# own headers (x86_64; tests/support/cpython_headers.py compiles them and checks this table). These
# interpreters describe most of it themselves in _Py_DebugOffsets, which wins where it is sound;
# the table fills what it does not export and stands in for a damaged block. The unicode.*_bit
# rows are bit positions in a str's state word (3.14t made `interned` a byte of its own).
_LAYOUT_COLUMNS = ((3, 13, False), (3, 13, True), (3, 14, False), (3, 14, True), (3, 15, False), (3, 15, True))
_LAYOUTS_313_ON = """
                             3.13  3.13t  3.14  3.14t  3.15  3.15t
object.type                     8     24     8     24     8     24
var.size                       16     32    16     32    16     32
type.name                      24     40    24     40    24     40
type.basicsize                 32     48    32     48    32     48
type.itemsize                  40     56    40     56    40     56
type.flags                    168    184   168    184   168    184
type.base                     256    272   256    272   256    272
tuple.items                    24     40    32     48    32     48
list.items                     24     40    24     40    24     40
dict.used                      16     32    16     32    16     32
dict.keys                      32     48    32     48    32     48
dict.values                    40     56    40     56    40     56
module.dict                    16     32    16     32    16     32
float.value                    16     32    16     32    16     32
bytes.sval                     32     48    32     48    32     48
cell.ref                       16     32    16     32    16     32
unicode.length                 16     32    16     32    16     32
unicode.state                  32     48    32     48    32     48
unicode.ascii_size             40     56    40     56    40     56
unicode.compact_size           56     72    56     72    56     72
unicode.data_any               56     72    56     72    56     72
unicode.kind_bit                2      2     2      8     2      8
unicode.compact_bit             5      5     5     11     5     11
unicode.ascii_bit               6      6     6     12     6     12
code.argcount                  52     68    52     68    52     68
code.firstlineno               68     84    68     84    68     84
code.nlocalsplus               72     88    72     88    72     88
code.localsplusnames           96    112    96    112    96    112
code.localspluskinds          104    120   104    120   104    120
code.filename                 112    128   112    128   112    128
code.name                     120    136   120    136   120    136
code.qualname                 128    144   128    144   128    144
code.linetable                136    152   136    152   136    152
code.code_adaptive            200    216   208    232   208    232
long.digits                    24     40    24     40    24     40
runtime.interpreters_head     632    632   808    808   936    936
interp.next                  7264   7264  7272   7272  7264   7264
interp.threads_head          7344   7344  7344   7344  7336   7336
interp.id                    7272   7272  7280   7280  7272   7272
interp.gil_ptr                 16     16    16     16    16     16
interp.modules               7656   7664  7688   7712  7592   7592
gil.holder                      8     16     8     16     8     16
gil.locked                     16     24    16     24    16     24
gil.size                      208    216   208    216   208    216
tstate.next                     8      8     8      8     8      8
tstate.interp                  16     16    16     16    16     16
tstate.current_frame           72     72    72     72    72     72
tstate.thread_id              152    152   152    152   176    176
tstate.native_thread_id       160    160   160    160   184    184
iframe.code                     0      0     0      0     0      0
iframe.previous                 8      8     8      8     8      8
iframe.instr                   56     56    56     56    56     56
iframe.owner                   70     70    74     78    74     78
iframe.localsplus              72     72    80     80    80     80
"""

# Fields only the free-threaded builds have: whether the GIL is on (a default build has no such
# field; its GIL always is).
_FREE_THREADED_COLUMNS = ((3, 13, True), (3, 14, True), (3, 15, True))
_FREE_THREADED_ONLY = """
                             3.13t  3.14t  3.15t
gil.enabled                      0      0      0
"""


def _columns(text: str, columns: tuple[tuple[int, int, bool], ...]) -> dict[tuple[int, int, bool], dict[str, int]]:
    """A table above as one dict of offsets per (major, minor, free-threaded) build."""
    rows = [line.split() for line in text.strip().splitlines()[1:]]
    return {build: {row[0]: int(row[1 + i]) for row in rows} for i, build in enumerate(columns)}


BUILD_TABLES = _columns(_LAYOUTS_313_ON, _LAYOUT_COLUMNS)
for _build, _only in _columns(_FREE_THREADED_ONLY, _FREE_THREADED_COLUMNS).items():
    BUILD_TABLES[_build].update(_only)
TABLES.update({(major, minor): table for (major, minor, free), table in BUILD_TABLES.items() if not free})
# The str state bits of the builds before 3.13 (one layout: interned:2, kind:3, compact, ascii).
STATE_BITS_BEFORE_313 = {"unicode.kind_bit": 2, "unicode.compact_bit": 5, "unicode.ascii_bit": 6}
for _version in ((3, 10), (3, 11), (3, 12)):
    TABLES[_version].update(STATE_BITS_BEFORE_313)

# How each version is shaped, beyond offsets.
#   frames:   "pyframe" (3.10 PyFrameObject chain) | "iframe" (_PyInterpreterFrame chain)
#   current:  how a thread state reaches its innermost frame
#   entry:    how the first frame of a _PyEval_EvalFrameDefault activation is recognised
#   gil:      where the GIL lives
#   long:     PyLongObject header ("ob_size" up to 3.11, "lv_tag" from 3.12)
#   refs:     how a frame holds its code object and locals: "pointer", or "stackref" (3.14+:
#             _PyStackRef, a pointer with tag bits, or a tagged small int)
SHAPES: dict[tuple[int, int], dict[str, str]] = {
    (3, 10): {"frames": "pyframe", "current": "frame", "entry": "every", "gil": "runtime", "long": "ob_size", "refs": "pointer"},
    (3, 11): {"frames": "iframe", "current": "cframe", "entry": "is_entry", "gil": "runtime", "long": "ob_size", "refs": "pointer"},
    (3, 12): {"frames": "iframe", "current": "cframe", "entry": "cstack", "gil": "interp", "long": "lv_tag", "refs": "pointer"},
    (3, 13): {"frames": "iframe", "current": "direct", "entry": "cstack", "gil": "interp", "long": "lv_tag", "refs": "pointer"},
    (3, 14): {"frames": "iframe", "current": "direct", "entry": "cstack", "gil": "interp", "long": "lv_tag", "refs": "stackref"},
    (3, 15): {"frames": "iframe", "current": "direct", "entry": "cstack", "gil": "interp", "long": "lv_tag", "refs": "stackref"},
}

# Where each key lives in the interpreter's DWARF types: (type name, field path), or a type
# name and None for its size. Used to derive (and so check) the layout when types exist.
_DWARF_OBJECT = {
    "object.type": ("PyObject", "ob_type"),
    "var.size": ("PyVarObject", "ob_size"),
    "type.name": ("PyTypeObject", "tp_name"),
    "type.basicsize": ("PyTypeObject", "tp_basicsize"),
    "type.itemsize": ("PyTypeObject", "tp_itemsize"),
    "type.flags": ("PyTypeObject", "tp_flags"),
    "type.base": ("PyTypeObject", "tp_base"),
    "tuple.items": ("PyTupleObject", "ob_item"),
    "list.items": ("PyListObject", "ob_item"),
    "dict.used": ("PyDictObject", "ma_used"),
    "dict.keys": ("PyDictObject", "ma_keys"),
    "dict.values": ("PyDictObject", "ma_values"),
    "module.dict": ("PyModuleObject", "md_dict"),
    "float.value": ("PyFloatObject", "ob_fval"),
    "bytes.sval": ("PyBytesObject", "ob_sval"),
    "cell.ref": ("PyCellObject", "ob_ref"),
    "unicode.length": ("PyASCIIObject", "length"),
    "unicode.state": ("PyASCIIObject", "state"),
    "unicode.ascii_size": ("PyASCIIObject", None),
    "unicode.compact_size": ("PyCompactUnicodeObject", None),
    "unicode.data_any": ("PyUnicodeObject", "data.any"),
}
_DWARF_CODE_311 = {
    "code.argcount": ("PyCodeObject", "co_argcount"),
    "code.firstlineno": ("PyCodeObject", "co_firstlineno"),
    "code.nlocalsplus": ("PyCodeObject", "co_nlocalsplus"),
    "code.localsplusnames": ("PyCodeObject", "co_localsplusnames"),
    "code.localspluskinds": ("PyCodeObject", "co_localspluskinds"),
    "code.filename": ("PyCodeObject", "co_filename"),
    "code.name": ("PyCodeObject", "co_name"),
    "code.qualname": ("PyCodeObject", "co_qualname"),
    "code.linetable": ("PyCodeObject", "co_linetable"),
    "code.code_adaptive": ("PyCodeObject", "co_code_adaptive"),
}
DWARF_SPEC: dict[tuple[int, int], dict[str, tuple[str, str | None]]] = {
    (3, 10): {
        **_DWARF_OBJECT,
        "long.digits": ("PyLongObject", "ob_digit"),
        "runtime.interpreters_head": ("_PyRuntimeState", "interpreters.head"),
        "runtime.gil_holder": ("_PyRuntimeState", "ceval.gil.last_holder"),
        "runtime.gil_locked": ("_PyRuntimeState", "ceval.gil.locked"),
        "interp.next": ("PyInterpreterState", "next"),
        "interp.threads_head": ("PyInterpreterState", "tstate_head"),
        "interp.runtime": ("PyInterpreterState", "runtime"),
        "interp.id": ("PyInterpreterState", "id"),
        "interp.modules": ("PyInterpreterState", "modules"),
        "tstate.next": ("PyThreadState", "next"),
        "tstate.interp": ("PyThreadState", "interp"),
        "tstate.frame": ("PyThreadState", "frame"),
        "tstate.thread_id": ("PyThreadState", "thread_id"),
        "pyframe.back": ("PyFrameObject", "f_back"),
        "pyframe.code": ("PyFrameObject", "f_code"),
        "pyframe.lasti": ("PyFrameObject", "f_lasti"),
        "pyframe.localsplus": ("PyFrameObject", "f_localsplus"),
        "code.argcount": ("PyCodeObject", "co_argcount"),
        "code.nlocals": ("PyCodeObject", "co_nlocals"),
        "code.code": ("PyCodeObject", "co_code"),
        "code.varnames": ("PyCodeObject", "co_varnames"),
        "code.filename": ("PyCodeObject", "co_filename"),
        "code.name": ("PyCodeObject", "co_name"),
        "code.firstlineno": ("PyCodeObject", "co_firstlineno"),
        "code.linetable": ("PyCodeObject", "co_linetable"),
    },
    (3, 11): {
        **_DWARF_OBJECT,
        **_DWARF_CODE_311,
        "long.digits": ("PyLongObject", "ob_digit"),
        "runtime.interpreters_head": ("_PyRuntimeState", "interpreters.head"),
        "runtime.gil_holder": ("_PyRuntimeState", "ceval.gil.last_holder"),
        "runtime.gil_locked": ("_PyRuntimeState", "ceval.gil.locked"),
        "interp.next": ("PyInterpreterState", "next"),
        "interp.threads_head": ("PyInterpreterState", "threads.head"),
        "interp.runtime": ("PyInterpreterState", "runtime"),
        "interp.id": ("PyInterpreterState", "id"),
        "interp.modules": ("PyInterpreterState", "modules"),
        "tstate.next": ("PyThreadState", "next"),
        "tstate.interp": ("PyThreadState", "interp"),
        "tstate.cframe": ("PyThreadState", "cframe"),
        "tstate.thread_id": ("PyThreadState", "thread_id"),
        "tstate.native_thread_id": ("PyThreadState", "native_thread_id"),
        "cframe.current_frame": ("_PyCFrame", "current_frame"),
        "iframe.code": ("_PyInterpreterFrame", "f_code"),
        "iframe.previous": ("_PyInterpreterFrame", "previous"),
        "iframe.instr": ("_PyInterpreterFrame", "prev_instr"),
        "iframe.is_entry": ("_PyInterpreterFrame", "is_entry"),
        "iframe.owner": ("_PyInterpreterFrame", "owner"),
        "iframe.localsplus": ("_PyInterpreterFrame", "localsplus"),
    },
    (3, 12): {
        **_DWARF_OBJECT,
        **_DWARF_CODE_311,
        "long.digits": ("PyLongObject", "long_value.ob_digit"),
        "runtime.interpreters_head": ("_PyRuntimeState", "interpreters.head"),
        "interp.next": ("PyInterpreterState", "next"),
        "interp.threads_head": ("PyInterpreterState", "threads.head"),
        "interp.runtime": ("PyInterpreterState", "runtime"),
        "interp.id": ("PyInterpreterState", "id"),
        "interp.gil_ptr": ("PyInterpreterState", "ceval.gil"),
        "interp.modules": ("PyInterpreterState", "imports.modules"),
        "gil.holder": ("struct _gil_runtime_state", "last_holder"),
        "gil.locked": ("struct _gil_runtime_state", "locked"),
        "gil.size": ("struct _gil_runtime_state", None),
        "tstate.next": ("PyThreadState", "next"),
        "tstate.interp": ("PyThreadState", "interp"),
        "tstate.cframe": ("PyThreadState", "cframe"),
        "tstate.thread_id": ("PyThreadState", "thread_id"),
        "tstate.native_thread_id": ("PyThreadState", "native_thread_id"),
        "cframe.current_frame": ("_PyCFrame", "current_frame"),
        "iframe.code": ("_PyInterpreterFrame", "f_code"),
        "iframe.previous": ("_PyInterpreterFrame", "previous"),
        "iframe.instr": ("_PyInterpreterFrame", "prev_instr"),
        "iframe.owner": ("_PyInterpreterFrame", "owner"),
        "iframe.localsplus": ("_PyInterpreterFrame", "localsplus"),
    },
    (3, 13): {
        **_DWARF_OBJECT,
        **_DWARF_CODE_311,
        "long.digits": ("PyLongObject", "long_value.ob_digit"),
        "runtime.interpreters_head": ("_PyRuntimeState", "interpreters.head"),
        "interp.next": ("PyInterpreterState", "next"),
        "interp.threads_head": ("PyInterpreterState", "threads.head"),
        "interp.id": ("PyInterpreterState", "id"),
        "interp.gil_ptr": ("PyInterpreterState", "ceval.gil"),
        "interp.modules": ("PyInterpreterState", "imports.modules"),
        "gil.holder": ("struct _gil_runtime_state", "last_holder"),
        "gil.locked": ("struct _gil_runtime_state", "locked"),
        "gil.size": ("struct _gil_runtime_state", None),
        "tstate.next": ("PyThreadState", "next"),
        "tstate.interp": ("PyThreadState", "interp"),
        "tstate.current_frame": ("PyThreadState", "current_frame"),
        "tstate.thread_id": ("PyThreadState", "thread_id"),
        "tstate.native_thread_id": ("PyThreadState", "native_thread_id"),
        "iframe.code": ("_PyInterpreterFrame", "f_executable"),
        "iframe.previous": ("_PyInterpreterFrame", "previous"),
        "iframe.instr": ("_PyInterpreterFrame", "instr_ptr"),
        "iframe.owner": ("_PyInterpreterFrame", "owner"),
        "iframe.localsplus": ("_PyInterpreterFrame", "localsplus"),
    },
}

# 3.14 and 3.15 name these fields as 3.13 does (f_executable became a _PyStackRef, at the same
# place); a free-threaded build's DWARF gives its own offsets under the same names.
DWARF_SPEC[(3, 14)] = DWARF_SPEC[(3, 15)] = DWARF_SPEC[(3, 13)]
# What only a free-threaded build's types have (_FREE_THREADED_ONLY), for 3.13 and later.
DWARF_SPEC_FREE_THREADED = {"gil.enabled": ("struct _gil_runtime_state", "enabled")}


def dwarf_spec(version: tuple[int, int], free_threaded: bool) -> dict[str, tuple[str, str | None]]:
    """Where each key lives in the DWARF types of this build (default or free-threaded)."""
    spec = DWARF_SPEC.get(version, {})
    return {**spec, **DWARF_SPEC_FREE_THREADED} if spec and free_threaded else spec


# _Py_DebugOffsets (3.13: Include/internal/pycore_runtime.h; 3.14+: pycore_debug_offsets.h): its
# uint64 fields after `char cookie[8]` and `uint64 version`, in declaration order, by section
# (tests/support/cpython_headers.py reads them out of the headers and checks these lists).
_DEBUG_OFFSETS_SECTIONS_313 = """
free_threaded
runtime_state: size finalizing interpreters_head
interpreter_state: size id next threads_head gc imports_modules sysdict builtins ceval_gil gil_runtime_state
    gil_runtime_state_enabled gil_runtime_state_locked gil_runtime_state_holder
thread_state: size prev next interp current_frame thread_id native_thread_id datastack_chunk status
interpreter_frame: size previous executable instr_ptr localsplus owner
code_object: size filename name qualname linetable firstlineno argcount localsplusnames localspluskinds co_code_adaptive
pyobject: size ob_type
type_object: size tp_name tp_repr tp_flags
tuple_object: size ob_item ob_size
list_object: size ob_item ob_size
dict_object: size ma_keys ma_values
float_object: size ob_fval
long_object: size lv_tag ob_digit
bytes_object: size ob_size ob_sval
unicode_object: size state length asciiobject_size
gc: size collecting
"""
_DEBUG_OFFSETS_SECTIONS_314 = """
free_threaded
runtime_state: size finalizing interpreters_head
interpreter_state: size id next threads_head threads_main gc imports_modules sysdict builtins ceval_gil
    gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked gil_runtime_state_holder
    code_object_generation tlbc_generation
thread_state: size prev next interp current_frame thread_id native_thread_id datastack_chunk status
interpreter_frame: size previous executable instr_ptr localsplus owner stackpointer tlbc_index
code_object: size filename name qualname linetable firstlineno argcount localsplusnames localspluskinds
    co_code_adaptive co_tlbc
pyobject: size ob_type
type_object: size tp_name tp_repr tp_flags
tuple_object: size ob_item ob_size
list_object: size ob_item ob_size
set_object: size used table mask
dict_object: size ma_keys ma_values
float_object: size ob_fval
long_object: size lv_tag ob_digit
bytes_object: size ob_size ob_sval
unicode_object: size state length asciiobject_size
gc: size collecting
gen_object: size gi_name gi_iframe gi_frame_state
llist_node: next prev
debugger_support: eval_breaker remote_debugger_support remote_debugging_enabled debugger_pending_call
    debugger_script_path debugger_script_path_size
"""
_DEBUG_OFFSETS_SECTIONS_315 = """
free_threaded
runtime_state: size finalizing interpreters_head
interpreter_state: size id next threads_head threads_main gc imports_modules sysdict builtins ceval_gil
    gil_runtime_state gil_runtime_state_enabled gil_runtime_state_locked gil_runtime_state_holder
    code_object_generation tlbc_generation
thread_state: size prev next interp current_frame base_frame last_profiled_frame last_profiled_frame_seq
    thread_id native_thread_id datastack_chunk status holds_gil gil_requested current_exception exc_state
err_stackitem: exc_value
interpreter_frame: size previous executable instr_ptr localsplus owner stackpointer tlbc_index
code_object: size filename name qualname linetable firstlineno argcount localsplusnames localspluskinds
    co_code_adaptive co_tlbc
pyobject: size ob_type
type_object: size tp_name tp_repr tp_flags tp_basicsize tp_dictoffset
heap_type_object: size ht_cached_keys
tuple_object: size ob_item ob_size
list_object: size ob_item ob_size
set_object: size used table mask
dict_object: size ma_keys ma_values
float_object: size ob_fval
long_object: size lv_tag ob_digit
bytes_object: size ob_size ob_sval
unicode_object: size state length asciiobject_size compactunicodeobject_size
gc: size collecting frame generation_stats_size generation_stats
gen_object: size gi_name gi_iframe gi_frame_state
llist_node: next prev
debugger_support: eval_breaker remote_debugger_support remote_debugging_enabled debugger_pending_call
    debugger_script_path debugger_script_path_size
"""


def _sections(text: str) -> tuple[str, ...]:
    """A field list above as "section.field" names ("free_threaded" stands alone)."""
    fields: list[str] = []
    section = ""
    for line in text.strip().splitlines():
        if ":" in line:
            section, line = (part.strip() for part in line.split(":", 1))
        fields += [f"{section}.{name}" if section else name for name in line.split()]
    return tuple(fields)


DEBUG_OFFSETS_FIELDS: dict[tuple[int, int], tuple[str, ...]] = {
    (3, 13): _sections(_DEBUG_OFFSETS_SECTIONS_313),
    (3, 14): _sections(_DEBUG_OFFSETS_SECTIONS_314),
    (3, 15): _sections(_DEBUG_OFFSETS_SECTIONS_315),
}
# The fields the walk reads, by the layout key each fills. The GIL's locked/holder are given
# relative to the interpreter (its embedded _gil), `enabled` relative to the GIL structure.
DEBUG_OFFSET_KEYS = {
    "runtime_state.size": "runtime.size",
    "runtime_state.interpreters_head": "runtime.interpreters_head",
    "interpreter_state.size": "interp.size",
    "interpreter_state.id": "interp.id",
    "interpreter_state.next": "interp.next",
    "interpreter_state.threads_head": "interp.threads_head",
    "interpreter_state.imports_modules": "interp.modules",
    "interpreter_state.ceval_gil": "interp.gil_ptr",
    "interpreter_state.gil_runtime_state": "interp.gil_embedded",
    "interpreter_state.gil_runtime_state_enabled": "gil.enabled",
    "interpreter_state.gil_runtime_state_locked": "interp.gil_locked",
    "interpreter_state.gil_runtime_state_holder": "interp.gil_holder",
    "thread_state.size": "tstate.size",
    "thread_state.next": "tstate.next",
    "thread_state.interp": "tstate.interp",
    "thread_state.current_frame": "tstate.current_frame",
    "thread_state.thread_id": "tstate.thread_id",
    "thread_state.native_thread_id": "tstate.native_thread_id",
    "thread_state.current_exception": "tstate.current_exception",
    "interpreter_frame.size": "iframe.size",
    "interpreter_frame.previous": "iframe.previous",
    "interpreter_frame.executable": "iframe.code",
    "interpreter_frame.instr_ptr": "iframe.instr",
    "interpreter_frame.localsplus": "iframe.localsplus",
    "interpreter_frame.owner": "iframe.owner",
    "interpreter_frame.tlbc_index": "iframe.tlbc_index",
    "code_object.size": "code.size",
    "code_object.filename": "code.filename",
    "code_object.name": "code.name",
    "code_object.qualname": "code.qualname",
    "code_object.linetable": "code.linetable",
    "code_object.firstlineno": "code.firstlineno",
    "code_object.argcount": "code.argcount",
    "code_object.localsplusnames": "code.localsplusnames",
    "code_object.localspluskinds": "code.localspluskinds",
    "code_object.co_code_adaptive": "code.code_adaptive",
    "code_object.co_tlbc": "code.tlbc",
    "pyobject.ob_type": "object.type",
    "type_object.tp_name": "type.name",
    "type_object.tp_flags": "type.flags",
    "type_object.tp_basicsize": "type.basicsize",
    "tuple_object.ob_item": "tuple.items",
    "tuple_object.ob_size": "var.size",
    "list_object.ob_item": "list.items",
    "float_object.ob_fval": "float.value",
    "long_object.ob_digit": "long.digits",
    "bytes_object.ob_sval": "bytes.sval",
    "unicode_object.state": "unicode.state",
    "unicode_object.length": "unicode.length",
    "unicode_object.asciiobject_size": "unicode.ascii_size",
    "unicode_object.compactunicodeobject_size": "unicode.compact_size",
}
# Each offset the block gives must lie inside the structure whose size it also gives.
DEBUG_OFFSET_SIZES = {"runtime": "runtime.size", "interp": "interp.size", "tstate": "tstate.size",
                      "iframe": "iframe.size", "code": "code.size"}
MAX_STRUCT_SIZE = 1 << 20  # no runtime structure comes near this; a larger size is garbage
DEBUG_OFFSETS_COOKIE = b"xdebugpy"


# Py_TPFLAGS_*_SUBCLASS (Include/object.h): every built-in type of these and its subclasses
# carry one; how types are told apart when their names cannot be read.
SUBCLASS_FLAGS = (
    (1 << 24, "int"),
    (1 << 25, "list"),
    (1 << 26, "tuple"),
    (1 << 27, "bytes"),
    (1 << 28, "str"),
    (1 << 29, "dict"),
    (1 << 31, "type"),
)
TPFLAGS_HEAPTYPE = 1 << 9
# The name of a type whose tp_name is unreadable and that no flag or structure identified.
UNNAMED_TYPE = "?"
# The "type" of an object whose type pointer leads to something that is no type object.
NOT_A_TYPE = "<not a type>"

# Stands in for the code object of a frame whose code object cannot be read.
UNREADABLE_CODE = {"name": "???", "qualname": "???", "filename": None, "firstlineno": None, "linetable": None}


class ReadError(Exception):
    """A read of the inferior's memory failed or was refused as absurd."""


class BudgetExceeded(Exception):
    """The walk used up its read or time budget."""


class UnknownArgument(ValueError):
    """An option the MI command does not know."""


class Target(Protocol):
    """What the walker needs from a debugger (or from a core file read in-process)."""

    def read(self, address: int, size: int) -> bytes:
        """size bytes at address; raises ReadError when they cannot be read."""

    def symbol_address(self, name: str) -> int | None:
        """Address of a global symbol (minimal symbols of .dynsym/.symtab suffice)."""

    def object_files(self) -> list[str]:
        """Paths of the loaded executable and libraries."""

    def type_offsets(self, spec: dict[str, tuple[str, str | None]], near: int) -> dict[str, int]:
        """Offsets of the spec's fields ("struct.field" -> (type name, member path or None for
        sizeof)) from the debug info of the code at address near; {} when it has none."""

    def thread_lwps(self) -> list[int]:
        """The LWPs of the process's threads."""

    def pid(self) -> int | None:
        """The process id, when known."""



# --------------------------------------------------------------------------- memory


class Memory:
    """Checked, counted reads of the target's memory."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self.reads = 0
        self.deadline = time.monotonic() + TIME_BUDGET
        # A dead process's memory does not change: each block is asked of the target once (the
        # walk makes tens of thousands of small reads, each a round trip through the debugger).
        # b"" marks a block the target cannot give whole; reads there go to the target as asked.
        self._blocks: dict[int, bytes] = {}
        unit = getattr(target, "read_block", CACHE_BLOCK)
        self._unit = unit if isinstance(unit, int) and 16 <= unit <= CACHE_BLOCK and unit & (unit - 1) == 0 else CACHE_BLOCK

    def read(self, address: int, size: int) -> bytes:
        if size == 0:
            return b""
        if address < 4096 or size < 0 or size > MAX_READ or address + size > 1 << 64:
            raise ReadError(f"refused read of {size} bytes at 0x{address:x}")
        self.reads += 1
        if self.reads > MAX_READS or (self.reads % 1024 == 0 and time.monotonic() > self.deadline):
            raise BudgetExceeded("the walk used up its budget of memory reads/time")
        unit = self._unit
        block = address & ~(unit - 1)
        if address + size <= block + unit:
            data = self._block(block)
            if data:
                return data[address - block:address - block + size]
        elif address + size <= block + 2 * unit:
            # Across two blocks (a str's header and text often are): both from the cache.
            first, second = self._block(block), self._block(block + unit)
            if first and second:
                start = address - block
                return first[start:] + second[: start + size - unit]
        return self._target.read(address, size)

    def _block(self, block: int) -> bytes:
        data = self._blocks.get(block)
        if data is None:
            try:
                data = self._target.read(block, self._unit)
            except ReadError:
                data = b""
            if len(data) != self._unit:
                data = b""
            if len(self._blocks) < CACHE_BYTES // self._unit:
                self._blocks[block] = data
        return data

    def u8(self, a: int) -> int:
        return self.read(a, 1)[0]

    def u16(self, a: int) -> int:
        return struct.unpack("<H", self.read(a, 2))[0]

    def i32(self, a: int) -> int:
        return struct.unpack("<i", self.read(a, 4))[0]

    def u32(self, a: int) -> int:
        return struct.unpack("<I", self.read(a, 4))[0]

    def i64(self, a: int) -> int:
        return struct.unpack("<q", self.read(a, 8))[0]

    def u64(self, a: int) -> int:
        return struct.unpack("<Q", self.read(a, 8))[0]

    ptr = u64

    def cstring(self, a: int, limit: int = 256) -> str:
        out = bytearray()
        chunk = 64
        while len(out) < limit:
            try:
                data = self.read(a + len(out), chunk)
            except ReadError:
                if chunk == 1:
                    break
                chunk = 1  # the string may end right before an unmapped page
                continue
            end = data.find(b"\0")
            if end >= 0:
                out += data[:end]
                return out.decode("utf-8", "replace")[:limit]
            out += data
        return out.decode("utf-8", "replace")[:limit]


# --------------------------------------------------------------------------- symbols & version


# libpython3.X.so.1.0, python3.X and the like: the interpreter's version in its file name.
VERSIONED_NAME = re.compile(r"^(?:lib)?python3\.(\d{1,2})(?:[^\d]|$)")


def version_from_name(name: str) -> tuple[int, int] | None:
    """(3, X) of a file name (not a path) such as libpython3.X.so.1.0 or python3.X."""
    m = VERSIONED_NAME.match(name)
    return (3, int(m.group(1))) if m else None


def _version_from_names(target: Target) -> tuple[int, int] | None:
    """3.X from a loaded libpython3.X or the python3.X executable, when Py_Version is absent."""
    for name in target.object_files():
        version = version_from_name(name.rsplit("/", 1)[-1])
        if version:
            return version
    return None


def hex_version(value: int) -> tuple[int, int, int] | None:
    major, minor, micro = (value >> 24) & 0xFF, (value >> 16) & 0xFF, (value >> 8) & 0xFF
    if major == 3 and minor < 100:
        return (major, minor, micro)
    return None


def dwarf_layout(
    target: Target, version: tuple[int, int], eval_address: int | None, free_threaded: bool = False
) -> dict[str, int]:
    """Offsets from the interpreter's own DWARF types, as the target reads them; {} when none."""
    spec = dwarf_spec(version, free_threaded)
    if not spec or eval_address is None:
        return {}
    return target.type_offsets(spec, eval_address)


class DebugOffsets(NamedTuple):
    """What an interpreter's _Py_DebugOffsets block says (3.13+)."""

    version: tuple[int, int, int]
    free_threaded: bool
    offsets: dict[str, int]  # layout keys
    read_as: tuple[int, int]  # whose field order it was read with (a newer version: the newest known)
    problem: str | None  # why the offsets cannot be trusted; None when they check out


def read_debug_offsets(mem: Memory, runtime: int) -> DebugOffsets | None:
    """The _Py_DebugOffsets at the start of _PyRuntime; None when there is none (before 3.13),
    or when not even its version can be read."""
    if mem.read(runtime, 8) != DEBUG_OFFSETS_COOKIE:
        return None
    version = hex_version(mem.u64(runtime + 8))
    if version is None or version[:2] < min(DEBUG_OFFSETS_FIELDS):
        return None
    read_as = version[:2] if version[:2] in DEBUG_OFFSETS_FIELDS else max(DEBUG_OFFSETS_FIELDS)
    fields = DEBUG_OFFSETS_FIELDS[read_as]
    values = dict(zip(fields, struct.unpack(f"<{len(fields)}Q", mem.read(runtime + 16, 8 * len(fields)))))
    out = {DEBUG_OFFSET_KEYS[f]: v for f, v in values.items() if f in DEBUG_OFFSET_KEYS}
    free_threaded = values["free_threaded"] == 1
    problem = None if values["free_threaded"] in (0, 1) else f"free_threaded is {values['free_threaded']}"
    problem = problem or _implausible(out)
    # The GIL's fields, given relative to the interpreter (its embedded _gil), are read relative
    # to the GIL the interpreter points at.
    base = out.pop("interp.gil_embedded")
    out["gil.locked"] = out.pop("interp.gil_locked") - base
    out["gil.holder"] = out.pop("interp.gil_holder") - base
    if not free_threaded:
        # Zero in a default build: there is no such field (the GIL cannot be disabled, one
        # bytecode copy per code object).
        for key in ("gil.enabled", "code.tlbc", "iframe.tlbc_index"):
            out.pop(key, None)
    if problem is None and not (0 <= out["gil.locked"] < 4096 and 0 <= out["gil.holder"] < 4096):
        problem = "the GIL's offsets lie outside the interpreter's GIL"
    return DebugOffsets(version, free_threaded, out, read_as, problem)


def _implausible(offsets: dict[str, int]) -> str | None:
    """Why a block's offsets cannot be right (a structure larger than any is, a field outside its
    structure); None when they are plausible."""
    for prefix, size_key in DEBUG_OFFSET_SIZES.items():
        size = offsets.get(size_key, 0)
        if not 0 < size <= MAX_STRUCT_SIZE:
            return f"{size_key} is {size}"
        for key, value in offsets.items():
            if key.startswith(prefix + ".") and key != size_key and value >= size:
                return f"{key} ({value}) lies outside its structure ({size} bytes)"
    return None


def tabled_layout(minor: tuple[int, int], free_threaded: bool) -> tuple[tuple[int, int], dict[str, int]]:
    """The tabled 3.13+ build nearest to (minor, free_threaded): itself, or the newest one before
    it (only interpreters with _Py_DebugOffsets, 3.13 and later, are asked for)."""
    known = sorted(v[:2] for v in BUILD_TABLES if v[2] == free_threaded)
    chosen = max((v for v in known if v <= minor), default=known[0])
    return chosen, dict(BUILD_TABLES[(*chosen, free_threaded)])


class Layout:
    def __init__(self, version: tuple[int, ...], offsets: dict[str, int], source: str,
                 free_threaded: bool = False, shape_of: tuple[int, int] | None = None) -> None:  # fmt: skip
        self.version = version
        self.minor = tuple(version[:2])
        self.off = offsets
        self.shape = SHAPES[shape_of or self.minor]
        self.source = source
        self.free_threaded = free_threaded
        self.dwarf: dict[str, int] = {}  # what the interpreter's DWARF says, when it has some
        self.debug_offsets: dict[str, int] = {}  # what _Py_DebugOffsets says (3.13+)

    def __getitem__(self, key: str) -> int:
        return self.off[key]

    def has(self, key: str) -> bool:
        return key in self.off


# --------------------------------------------------------------------------- line tables


def _varint(data: bytes, i: int) -> tuple[int, int]:
    b = data[i]
    i += 1
    value = b & 63
    shift = 0
    while b & 64:
        b = data[i]
        i += 1
        shift += 6
        value |= (b & 63) << shift
        if shift > 60:
            raise ValueError("varint too long")
    return value, i


def _svarint(data: bytes, i: int) -> tuple[int, int]:
    value, i = _varint(data, i)
    return (-(value >> 1) if value & 1 else value >> 1), i


def line_from_locations(table: bytes, firstlineno: int, unit: int) -> int | None:
    """Line of code unit `unit` from a 3.11+ location table (Objects/locations.md)."""
    if unit < 0:
        return firstlineno
    line = firstlineno
    start = 0
    i = 0
    n = len(table)
    while i < n:
        first = table[i]
        if not first & 0x80:
            return None  # not at an entry start: corrupt table
        code = (first >> 3) & 15
        length = (first & 7) + 1
        try:
            if code in (13, 14):
                delta, _ = _svarint(table, i + 1)
            elif code in (11, 12):
                delta = code - 10
            else:
                delta = 0
        except (IndexError, ValueError):
            return None
        line += delta
        if start <= unit < start + length:
            return None if code == 15 else line
        start += length
        i += 1
        while i < n and not table[i] & 0x80:
            i += 1
    return None


def line_from_pep626(table: bytes, firstlineno: int, byte_offset: int) -> int | None:
    """Line of a bytecode offset from a 3.10 co_linetable: (start delta, line delta) pairs."""
    if byte_offset < 0:
        return firstlineno
    line = firstlineno
    start = 0
    for i in range(0, len(table) - 1, 2):
        sdelta = table[i]
        ldelta = table[i + 1] - 256 if table[i + 1] > 127 else table[i + 1]
        end = start + sdelta
        if ldelta != -128:
            line += ldelta
        if start <= byte_offset < end:
            return None if ldelta == -128 else line
        start = end
    return None


# --------------------------------------------------------------------------- objects


class Objects:
    """Reads Python objects (type names, str, bytes, tuples, code objects) from memory."""

    def __init__(self, mem: Memory, layout: Layout) -> None:
        self.mem = mem
        self.L = layout
        self._type_names: dict[int, str] = {}
        self._codes: dict[int, dict] = {}

    def type_name(self, obj: int) -> str:
        tp = self.mem.ptr(obj + self.L["object.type"])
        name = self._type_names.get(tp)
        if name is None:
            name = self.mem.cstring(self.mem.ptr(tp + self.L["type.name"]), 128) or self._name_by_flags(tp)
            self._type_names[tp] = name
        return name

    def _name_by_flags(self, tp: int) -> str:
        """The name of a built-in type whose tp_name is unreadable, from its subclass flag.

        tp_name points into the interpreter's read-only data, which a core does not hold:
        without the interpreter's file the names are gone, but the type objects themselves
        (writable data) are in the core. A type carrying a flag whose base does not is the
        built-in type itself; bool is the one static type built on int.
        """
        try:
            if not self._is_type_object(tp):
                return NOT_A_TYPE
            flags = self.mem.u64(tp + self.L["type.flags"])
            for bit, name in SUBCLASS_FLAGS:
                if not flags & bit:
                    continue
                base = self.mem.ptr(tp + self.L["type.base"])
                if not base or not self.mem.u64(base + self.L["type.flags"]) & bit:
                    return name
                if name == "int" and not flags & TPFLAGS_HEAPTYPE and self._name_by_flags(base) == "int":
                    return "bool"
                return UNNAMED_TYPE
        except ReadError:
            return NOT_A_TYPE
        except KeyError:
            pass
        return UNNAMED_TYPE

    def _is_type_object(self, tp: int) -> bool:
        """Whether tp is an object of a type whose own type is `type` (the type of `type` is
        `type` itself): a damaged object's type pointer into garbage is not."""
        meta = self.mem.ptr(tp + self.L["object.type"])
        for _ in range(3):
            above = self.mem.ptr(meta + self.L["object.type"])
            if above == meta:
                return True
            meta = above
        return False

    def learn_type(self, obj: int, name: str) -> None:
        """Name the type of obj, whose tp_name is unreadable, after its structure checked out."""
        tp = self.mem.ptr(obj + self.L["object.type"])
        if self._type_names.get(tp) == UNNAMED_TYPE:
            self._type_names[tp] = name

    def _looks_like_code(self, addr: int) -> bool:
        """A code object by its fields: its name and file name are str, its line table bytes."""
        L = self.L
        try:
            return (
                self.type_name(self.mem.ptr(addr + L["code.name"])) == "str"
                and self.type_name(self.mem.ptr(addr + L["code.filename"])) == "str"
                and self.type_name(self.mem.ptr(addr + L["code.linetable"])) == "bytes"
            )
        except ReadError:
            return False

    def var_size(self, obj: int) -> int:
        return self.mem.i64(obj + self.L["var.size"])

    def unicode(self, obj: int, limit: int = MAX_NAME_CHARS) -> str:
        L = self.L
        short = self._short_ascii(obj, limit)
        if short is not None:
            return short
        length = self.mem.i64(obj + L["unicode.length"])
        if length < 0 or length > 1 << 40:
            raise ReadError(f"absurd str length {length}")
        state = self.mem.u32(obj + L["unicode.state"])
        kind = (state >> L["unicode.kind_bit"]) & 7
        compact = (state >> L["unicode.compact_bit"]) & 1
        ascii_only = (state >> L["unicode.ascii_bit"]) & 1
        if kind not in (1, 2, 4):
            raise ReadError(f"str of unknown kind {kind}")
        if compact:
            data = obj + (L["unicode.ascii_size"] if ascii_only else L["unicode.compact_size"])
        else:
            data = self.mem.ptr(obj + L["unicode.data_any"])
        count = min(length, limit)
        raw = self.mem.read(data, count * kind)
        codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
        text = raw.decode(codec, "replace")
        return text + ("..." if count < length else "")

    def _short_ascii(self, obj: int, limit: int) -> str | None:
        """unicode() of a compact ASCII str of up to SHORT_TEXT characters (module names,
        attribute names) in one read of header and text; None for any other (unicode() then
        reads it field by field, and raises what it raises)."""
        L = self.L
        text_at = L["unicode.ascii_size"]
        try:
            head = self.mem.read(obj, text_at + SHORT_TEXT)
        except ReadError:
            return None
        length = struct.unpack_from("<q", head, L["unicode.length"])[0]
        state = struct.unpack_from("<I", head, L["unicode.state"])[0]
        if (
            not 0 <= length <= SHORT_TEXT
            or (state >> L["unicode.kind_bit"]) & 7 != 1
            or not (state >> L["unicode.compact_bit"]) & 1
            or not (state >> L["unicode.ascii_bit"]) & 1
        ):
            return None
        count = min(length, limit)
        return head[text_at : text_at + count].decode("latin-1", "replace") + ("..." if count < length else "")

    def bytes_value(self, obj: int, limit: int) -> tuple[bytes, int]:
        size = self.var_size(obj)
        if size < 0 or size > 1 << 40:
            raise ReadError(f"absurd bytes size {size}")
        return self.mem.read(obj + self.L["bytes.sval"], min(size, limit)), size

    def tuple_item(self, obj: int, i: int) -> int:
        return self.mem.ptr(obj + self.L["tuple.items"] + 8 * i)

    def code(self, addr: int) -> dict:
        """filename/name/qualname/firstlineno/linetable of a code object, cached per address."""
        cached = self._codes.get(addr)
        if cached is not None:
            return cached
        L = self.L
        tname = self.type_name(addr)
        if tname != "code":
            if tname != UNNAMED_TYPE or not self._looks_like_code(addr):
                raise ReadError(f"0x{addr:x} is not a code object")
            self.learn_type(addr, "code")
        name = self.unicode(self.mem.ptr(addr + L["code.name"]))
        qualname = name
        if L.has("code.qualname"):
            try:
                qualname = self.unicode(self.mem.ptr(addr + L["code.qualname"]))
            except ReadError:
                pass
        try:
            filename = self.unicode(self.mem.ptr(addr + L["code.filename"]))
        except ReadError:
            filename = None
        firstlineno = self.mem.i32(addr + L["code.firstlineno"])
        try:
            table, _ = self.bytes_value(self.mem.ptr(addr + L["code.linetable"]), MAX_LINETABLE)
        except ReadError:
            table = None
        info = {
            "name": name,
            "qualname": qualname,
            "filename": filename,
            "firstlineno": firstlineno,
            "linetable": table,
        }
        self._codes[addr] = info
        return info

    # ---------------------------------------------------------------- safe reprs

    def int_value(self, obj: int) -> int | None:
        """Value of a small int (up to 4 digits of 30 bits); None for bigger ones."""
        if self.L.shape["long"] == "lv_tag":
            tag = self.mem.u64(obj + self.L["var.size"])
            ndigits = tag >> 3
            sign = {0: 1, 1: 0, 2: -1}.get(tag & 3, 1)
        else:
            size = self.var_size(obj)
            ndigits = abs(size)
            sign = (size > 0) - (size < 0)
        if ndigits > 4:
            return None
        raw = self.mem.read(obj + self.L["long.digits"], 4 * ndigits) if ndigits else b""
        value = 0
        for k in range(ndigits - 1, -1, -1):
            value = (value << 30) | (struct.unpack_from("<I", raw, 4 * k)[0] & ((1 << 30) - 1))
        return sign * value

    def safe_repr(self, obj: int) -> str:
        """A short description of a value, read from memory only."""
        if obj == 0:
            return "<NULL>"
        tname = self.type_name(obj)
        if tname == "NoneType":
            return "None"
        if tname == "bool":
            v = self.int_value(obj)
            return "True" if v else "False"
        if tname == "int":
            v = self.int_value(obj)
            return str(v) if v is not None else "<int with more than 120 bits>"
        if tname == "float":
            return repr(struct.unpack("<d", self.mem.read(obj + self.L["float.value"], 8))[0])
        if tname == "str":
            text = self.unicode(obj, MAX_REPR)
            return _clip(repr(text))
        if tname == "bytes":
            data, size = self.bytes_value(obj, MAX_REPR)
            r = repr(data)
            return _clip(r if size <= len(data) else r + f"... ({size} bytes)")
        if tname in ("list", "tuple"):
            n = self.var_size(obj)
            return f"<{tname} of {n} items>"
        if tname == "dict":
            n = self.mem.i64(obj + self.L["dict.used"])
            return f"<dict of {n} items>"
        return f"<{_clip(tname, 60)} object at 0x{obj:x}>"


def _clip(text: str, limit: int = MAX_REPR) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- the walk


class Walker:
    def __init__(self, mem: Memory, layout: Layout, runtime: int) -> None:
        self.mem = mem
        self.L = layout
        self.runtime = runtime
        self.obj = Objects(mem, layout)
        self.warnings: list[str] = []
        self._problems: list[str] = []  # what went wrong in the thread being walked

    # ---------------------------------------------------------------- interpreters/threads

    def interpreters(self) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        interp = self.mem.ptr(self.runtime + self.L["runtime.interpreters_head"])
        while interp and interp not in seen:
            if len(out) >= MAX_INTERPRETERS:
                self.warnings.append(f"more than {MAX_INTERPRETERS} interpreters; the rest were skipped")
                break
            seen.add(interp)
            out.append(interp)
            try:
                interp = self.mem.ptr(interp + self.L["interp.next"])
            except ReadError as e:
                self.warnings.append(f"interpreter list broken after 0x{interp:x}: {e}")
                break
        return out

    def thread_states(self, interp: int) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        try:
            ts = self.mem.ptr(interp + self.L["interp.threads_head"])
        except ReadError as e:
            self.warnings.append(f"cannot read the thread list of interpreter 0x{interp:x}: {e}")
            return out
        while ts and ts not in seen:
            if len(out) >= MAX_THREADS:
                self.warnings.append(f"more than {MAX_THREADS} Python threads; the rest were skipped")
                break
            seen.add(ts)
            try:
                owner = self.mem.ptr(ts + self.L["tstate.interp"])
            except ReadError as e:
                self.warnings.append(f"thread list of interpreter 0x{interp:x} broken: {e}")
                break
            if owner != interp:
                self.warnings.append(f"thread state 0x{ts:x} does not belong to its interpreter; list ends there")
                break
            out.append(ts)
            try:
                ts = self.mem.ptr(ts + self.L["tstate.next"])
            except ReadError as e:
                self.warnings.append(f"thread list of interpreter 0x{interp:x} broken: {e}")
                break
        return out

    def gil_range(self, interp: int) -> tuple[int, int] | None:
        """Where the GIL that governs this interpreter lies (3.12+: it hangs off the interpreter),
        so that a thread waiting on a lock inside it is known to wait for the GIL."""
        L = self.L
        if L.shape["gil"] != "interp" or not L.has("gil.size"):
            return None
        try:
            gil = self.mem.ptr(interp + L["interp.gil_ptr"])
        except ReadError:
            return None
        return (gil, gil + L["gil.size"]) if gil else None

    def gil_enabled(self, interp: int) -> bool | None:
        """Whether a GIL governs this interpreter: always in a default build; in a free-threaded
        one only while something turned it on (PYTHON_GIL=1, an extension module that does not
        declare itself free-threading safe). None when that cannot be read."""
        L = self.L
        if not L.free_threaded:
            return True
        if not L.has("gil.enabled"):
            return None
        try:
            gil = self.mem.ptr(interp + L["interp.gil_ptr"])
            # A count of the requests that enabled it (INT_MAX: for good); 0 when disabled.
            return self.mem.i32(gil + L["gil.enabled"]) != 0 if gil else None
        except ReadError:
            return None

    def gil(self, interp: int) -> tuple[bool | None, int | None]:
        """(locked, last holder) of the GIL that governs this interpreter; (None, None) where
        unknown, or where no GIL governs it (a free-threaded build running without one: no
        thread holds it, and its locked/last holder words are stale)."""
        L = self.L
        try:
            if L.shape["gil"] == "runtime":
                locked = self.mem.i32(self.runtime + L["runtime.gil_locked"])
                holder = self.mem.ptr(self.runtime + L["runtime.gil_holder"])
            else:
                if self.gil_enabled(interp) is not True:
                    return None, None
                gil = self.mem.ptr(interp + L["interp.gil_ptr"])
                locked = self.mem.i32(gil + L["gil.locked"])
                holder = self.mem.ptr(gil + L["gil.holder"])
        except (ReadError, KeyError):
            return None, None
        return bool(locked), holder

    # ---------------------------------------------------------------- frames

    def frames(self, tstate: int, locals_frames: int) -> tuple[list[dict], str | None]:
        """Frames of one thread, innermost first; a warning when the chain broke."""
        out: list[dict] = []
        self._problems: list[str] = []
        try:
            if self.L.shape["frames"] == "pyframe":
                self._pyframes(tstate, out, locals_frames)
            else:
                self._iframes(tstate, out, locals_frames)
        except BudgetExceeded:
            raise
        except (ReadError, KeyError, ValueError, struct.error, OverflowError, IndexError) as e:
            self._problems.append(f"frames end early: {e}")
        if len(out) >= MAX_FRAMES:
            self._problems.append(f"stopped after {MAX_FRAMES} frames")
        return out, "; ".join(self._problems) or None

    def _code_info(self, frame: int, code: int) -> dict | None:
        """The code object's names and line table; None (and a note) when it is unreadable.

        The chain itself may still be sound, so the walk goes on to the caller's frame.
        """
        try:
            return self.obj.code(code)
        except ReadError as e:
            self._problems.append(f"frame 0x{frame:x} has an unreadable code object ({e})")
            return None

    def _current_frame(self, tstate: int) -> int:
        L = self.L
        how = L.shape["current"]
        if how == "frame":
            return self.mem.ptr(tstate + L["tstate.frame"])
        if how == "cframe":
            cframe = self.mem.ptr(tstate + L["tstate.cframe"])
            return self.mem.ptr(cframe + L["cframe.current_frame"]) if cframe else 0
        return self.mem.ptr(tstate + L["tstate.current_frame"])

    def _pyframes(self, tstate: int, out: list[dict], locals_frames: int) -> None:
        L = self.L
        frame = self._current_frame(tstate)
        seen: set[int] = set()
        while frame and len(out) < MAX_FRAMES:
            if frame in seen:
                raise ValueError(f"frame chain loops at 0x{frame:x}")
            seen.add(frame)
            code = self.mem.ptr(frame + L["pyframe.code"])
            info = self._code_info(frame, code)
            if info is None:
                out.append(self._frame_dict(UNREADABLE_CODE, frame, None, group=len(out), entry=True))
                frame = self.mem.ptr(frame + L["pyframe.back"])
                continue
            lasti = self.mem.i32(frame + L["pyframe.lasti"])
            line = None
            if info["linetable"] is not None:
                line = line_from_pep626(info["linetable"], info["firstlineno"], lasti * 2)
            entry = self._frame_dict(info, frame, line, group=len(out), entry=True)
            if len(out) < locals_frames:
                entry["locals"] = self._locals_310(frame, code)
            out.append(entry)
            frame = self.mem.ptr(frame + L["pyframe.back"])

    def _iframes(self, tstate: int, out: list[dict], locals_frames: int) -> None:
        L = self.L
        frame = self._current_frame(tstate)
        seen: set[int] = set()
        group = 0
        entry_kind = L.shape["entry"]
        while frame and len(out) < MAX_FRAMES:
            if frame in seen:
                raise ValueError(f"frame chain loops at 0x{frame:x}")
            seen.add(frame)
            previous = self.mem.ptr(frame + L["iframe.previous"])
            owner = self.mem.u8(frame + L["iframe.owner"])
            if entry_kind == "cstack" and owner >= FIRST_SHIM_OWNER:
                # The shim frame an activation of _PyEval_EvalFrameDefault pushes first: the
                # frames after it belong to the next activation out.
                if out and out[-1]["group"] == group:
                    out[-1]["entry"] = True
                    group += 1
                frame = previous
                continue
            code = self._reference(self.mem.ptr(frame + L["iframe.code"]))
            is_entry = False
            if entry_kind == "is_entry":
                is_entry = bool(self.mem.u8(frame + L["iframe.is_entry"]))
            info = self._code_info(frame, code)
            if info is None:
                out.append(self._frame_dict(UNREADABLE_CODE, frame, None, group=group, entry=is_entry))
                group += is_entry
                frame = previous
                continue
            instr = self.mem.ptr(frame + L["iframe.instr"])
            unit = (instr - self._bytecode(frame, code)) // 2
            line = None
            if info["linetable"] is not None and -1 <= unit < 1 << 24:
                line = line_from_locations(info["linetable"], info["firstlineno"], unit)
            entry = self._frame_dict(info, frame, line, group=group, entry=is_entry)
            if len(out) < locals_frames:
                entry["locals"] = self._locals_311(frame, code)
            out.append(entry)
            if is_entry:
                group += 1
            frame = previous

    def _reference(self, word: int) -> int:
        """The object a frame's reference word points at (3.14+ tags a _PyStackRef's low bits)."""
        return word & ~STACKREF_TAG_BITS if self.L.shape["refs"] == "stackref" else word

    def _bytecode(self, frame: int, code: int) -> int:
        """Where the bytecode the frame runs starts: the code object's own, or in a
        free-threaded 3.14+ build the thread's copy of it (co_tlbc->entries[tlbc_index])."""
        L = self.L
        if L.has("code.tlbc") and L.has("iframe.tlbc_index"):
            index = self.mem.i32(frame + L["iframe.tlbc_index"])
            if index > 0:
                copies = self.mem.ptr(code + L["code.tlbc"])
                if not 0 < index < self.mem.i64(copies):
                    raise ReadError(f"frame 0x{frame:x}: bytecode copy {index} of a code object that has fewer")
                return self.mem.ptr(copies + 8 + 8 * index)
        return code + L["code.code_adaptive"]

    def _frame_dict(self, info: dict, frame: int, line: int | None, group: int, entry: bool) -> dict:
        return {
            "function": info["qualname"],
            "name": info["name"],
            "file": info["filename"],
            "line": line,
            "firstlineno": info["firstlineno"],
            "frame": frame,
            "group": group,
            "entry": entry,
        }

    # ---------------------------------------------------------------- locals

    def _locals_310(self, frame: int, code: int) -> dict[str, str]:
        L = self.L
        out: dict[str, str] = {}
        try:
            n = self.mem.i32(code + L["code.nlocals"])
            names = self.mem.ptr(code + L["code.varnames"])
            n = max(0, min(n, self.obj.var_size(names), MAX_LOCALS))
            for i in range(n):
                self._one_local(out, names, i, self.mem.ptr(frame + L["pyframe.localsplus"] + 8 * i), 0)
        except ReadError as e:
            out["<error>"] = _clip(str(e))
        return out

    def _locals_311(self, frame: int, code: int) -> dict[str, str]:
        L = self.L
        out: dict[str, str] = {}
        try:
            names = self.mem.ptr(code + L["code.localsplusnames"])
            n = self.obj.var_size(names)
            if L.has("code.nlocalsplus"):
                n = min(n, self.mem.i32(code + L["code.nlocalsplus"]))
            kinds, _ = self.obj.bytes_value(self.mem.ptr(code + L["code.localspluskinds"]), MAX_LOCALS)
            n = max(0, min(n, len(kinds), MAX_LOCALS))
            stackrefs = L.shape["refs"] == "stackref"
            for i in range(n):
                value = self.mem.ptr(frame + L["iframe.localsplus"] + 8 * i)
                if stackrefs and value & STACKREF_TAG_BITS == STACKREF_INT_TAG:
                    # A small int held in the reference itself, no object behind it.
                    out[self._local_name(names, i)] = str(struct.unpack("<q", struct.pack("<Q", value))[0] >> 2)
                    continue
                self._one_local(out, names, i, self._reference(value), kinds[i])
        except ReadError as e:
            out["<error>"] = _clip(str(e))
        return out

    def _local_name(self, names: int, i: int) -> str:
        try:
            return self.obj.unicode(self.obj.tuple_item(names, i), 64)
        except ReadError:
            return f"<local {i}>"

    def _one_local(self, out: dict[str, str], names: int, i: int, value: int, kind: int) -> None:
        name = self._local_name(names, i)
        if not value:
            return  # unbound
        try:
            if kind & (CO_FAST_CELL | CO_FAST_FREE) and self.obj.type_name(value) == "cell":
                value = self.mem.ptr(value + self.L["cell.ref"])
                if not value:
                    return
            out[name] = self.obj.safe_repr(value)
        except ReadError:
            out[name] = f"<unreadable at 0x{value:x}>"


# --------------------------------------------------------------------------- threads -> LWPs


def map_thread_ids(mem: Memory, thread_ids: list[int], lwps: set[int]) -> dict[int, int]:
    """pthread_t -> LWP: glibc keeps the tid inside struct pthread; find at which offset."""
    def mapped(offset: int) -> dict[int, int]:
        found: dict[int, int] = {}
        for tid in thread_ids:
            try:
                value = mem.u32(tid + offset)
            except ReadError:
                continue
            if value in lwps:
                found[tid] = value
        return found

    best = mapped(PTHREAD_TID_OFFSET_X86_64)
    if len(best) == len(thread_ids):
        return best
    # Another libc layout: take the offset that maps the most thread ids to distinct LWPs.
    for offset in range(0, 2048, 4):
        candidate = mapped(offset)
        if len(candidate) > len(best) and len(set(candidate.values())) == len(candidate):
            best = candidate
    return best


# --------------------------------------------------------------------------- imported modules
#
# PyDictKeysObject (Objects/dict-common.h in 3.10, Include/internal/pycore_dict.h later):
# 3.10: dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices[] (index width from
# dk_size), entries {hash, key, value}. 3.11+: dk_refcnt, u8 dk_log2_size, u8
# dk_log2_index_bytes, u8 dk_kind, u32 dk_version, dk_usable, dk_nentries, dk_indices[];
# entries {hash, key, value} for general keys, {key, value} for str-only keys.
DICT_KEYS_GENERAL = 0
DICT_KEYS_UNICODE = 1
# What a module's namespace is read for (Imports).
MODULE_ATTRIBUTES = ("__file__", "__version__")


class DictTable(NamedTuple):
    """Where a combined-table dict's keys lie (Imports.dict_table)."""

    size: int  # slots of the index table (a power of two)
    width: int  # bytes of one index slot
    indices: int  # address of the index table
    entries: int  # address of the entries, in insertion order
    entry_size: int
    nentries: int  # entries used (deleted ones included)
    hashed: bool  # each entry starts with the key's hash (3.10, and 3.11+ general tables)


class Imports:
    """Top-level modules in sys.modules with their __file__ and __version__, read from memory."""

    def __init__(self, walker: Walker) -> None:
        self.mem = walker.mem
        self.L = walker.L
        self.obj = walker.obj
        self.warnings = walker.warnings
        self._names: dict[int, str | None] = {}  # str object -> text (short keys only)
        # A wanted attribute name -> (its str object, its hash), learned from the first module
        # whose namespace is scanned and holds it: the process's str hashes are salted, so they
        # are taken from its own memory. Later modules are then looked up by hash.
        self._keys: dict[str, tuple[int, int]] = {}

    def dict_table(self, d: int) -> DictTable | None:
        """The layout of a combined-table dict's keys (checked for sanity); None for a split one."""
        mem, L = self.mem, self.L
        keys = mem.ptr(d + L["dict.keys"])
        if mem.ptr(d + L["dict.values"]):
            return None  # split table: instance dicts, never sys.modules or a module's namespace
        if self.L.minor == (3, 10):
            size = mem.i64(keys + 8)
            if size <= 0 or size & (size - 1) or size > 1 << 30:
                raise ReadError(f"dict keys 0x{keys:x}: absurd size {size}")
            width = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4
            table = DictTable(size, width, keys + 40, keys + 40 + size * width, 24, mem.i64(keys + 32), True)
        else:
            head = mem.read(keys + 8, 24)
            log2_size, log2_index_bytes, kind = head[0], head[1], head[2]
            if log2_size > 30 or log2_index_bytes > 33 or kind not in (DICT_KEYS_GENERAL, DICT_KEYS_UNICODE):
                raise ReadError(f"dict keys 0x{keys:x}: not a combined table")
            size, hashed = 1 << log2_size, kind == DICT_KEYS_GENERAL
            nentries = struct.unpack_from("<q", head, 16)[0]
            width = (1 << log2_index_bytes) >> log2_size
            table = DictTable(size, width, keys + 32, keys + 32 + (1 << log2_index_bytes), 24 if hashed else 16, nentries, hashed)
        if table.nentries < 0 or table.nentries > size or table.nentries > MAX_DICT_ENTRIES:
            raise ReadError(f"dict keys 0x{keys:x}: absurd entry count {table.nentries}")
        return table

    def dict_items(self, d: int) -> list[tuple[int, int]]:
        """(key, value) pointers of a combined-table dict; [] for a split one."""
        table = self.dict_table(d)
        if table is None:
            return []
        entry_size, nentries = table.entry_size, table.nentries
        key_at = 8 if table.hashed else 0  # after me_hash
        raw = b""
        for start in range(0, nentries * entry_size, MAX_READ - MAX_READ % entry_size):
            raw += self.mem.read(table.entries + start, min(MAX_READ - MAX_READ % entry_size, nentries * entry_size - start))
        out = []
        for i in range(nentries):
            key, value = struct.unpack_from("<QQ", raw, i * entry_size + key_at)
            if key and value:
                out.append((key, value))
        return out

    def short_name(self, key: int, lengths: tuple[int, ...]) -> str | None:
        """The text of a str key when its length is one of `lengths` (one read otherwise)."""
        if key in self._names:
            return self._names[key]
        text = None
        try:
            if self.mem.i64(key + self.L["unicode.length"]) in lengths and self.obj.type_name(key) == "str":
                text = self.obj.unicode(key, max(lengths))
        except ReadError:
            text = None
        self._names[key] = text
        return text

    def find_modules_dict(self, interp: int) -> int | None:
        """sys.modules of an interpreter: at its known offset when that checks out, else the
        dict the interpreter state points to that maps "sys" and "builtins" to modules."""
        if self.L.has("interp.modules"):
            try:
                d = self.mem.ptr(interp + self.L["interp.modules"])
                if self._is_modules_dict(d):
                    return d
            except ReadError:
                pass
        try:
            block = self.mem.read(interp, INTERP_SCAN_BYTES)
        except ReadError:
            block = self.mem.read(interp, 4096)
        for (d,) in struct.iter_unpack("<Q", block):
            if d < 4096 or d & 7:
                continue
            try:
                if self._is_modules_dict(d):
                    return d
            except ReadError:
                continue
        return None

    def _is_modules_dict(self, d: int) -> bool:
        if not d or self.obj.type_name(d) != "dict":
            return False
        found: dict[str, int] = {}
        for key, value in self.dict_items(d):
            name = self.short_name(key, (3, 8))
            if name in ("sys", "builtins") and self.obj.type_name(value) in ("module", UNNAMED_TYPE):
                found[name] = value
                if len(found) == 2:
                    break  # keys are unique; both come first in sys.modules (of thousands)
        if set(found) != {"sys", "builtins"}:
            return False
        sys_module, builtins = found["sys"], found["builtins"]
        if self.obj.type_name(sys_module) == "module":
            return True
        # Type names unreadable: sys and builtins of one type, each with a namespace dict, name
        # that type "module" for the entries that follow.
        same = self.mem.ptr(sys_module + self.L["object.type"]) == self.mem.ptr(builtins + self.L["object.type"])
        if same and all(self.obj.type_name(self.mem.ptr(m + self.L["module.dict"])) == "dict" for m in (sys_module, builtins)):
            self.obj.learn_type(sys_module, "module")
            return True
        return False

    def top_level(self, interp: int) -> list[dict]:
        """Top-level modules, and the first-level modules of a namespace package (google has no
        __file__ and no version: google.protobuf has both, and it is what was installed)."""
        modules = self.find_modules_dict(interp)
        if modules is None:
            self.warnings.append("sys.modules not found in the interpreter state")
            return []
        out: list[dict] = []
        inner: list[tuple[str, int]] = []  # (name, module) of "a.b" modules, read if a is a namespace
        for key, module in self.dict_items(modules):
            if len(out) >= MAX_IMPORTS:
                self.warnings.append(f"more than {MAX_IMPORTS} top-level modules; the rest were skipped")
                break
            try:
                name = self.obj.unicode(key, 200)
                if name.count(".") > 1 or self.obj.type_name(module) != "module":
                    continue
                if "." in name:
                    inner.append((name, module))
                    continue
                out.append(self._module_entry(name, module))
            except ReadError as e:
                self.warnings.append(f"an entry of sys.modules is unreadable: {e}")
        namespaces = {e["name"] for e in out if e["file"] is None}
        for name, module in inner:
            if name.split(".", 1)[0] in namespaces and len(out) < MAX_IMPORTS:
                try:
                    out.append(self._module_entry(name, module))
                except ReadError as e:
                    self.warnings.append(f"an entry of sys.modules is unreadable: {e}")
        return out

    def _module_entry(self, name: str, module: int) -> dict:
        entry = {"name": name, "file": None, "version": None}
        namespace = self.mem.ptr(module + self.L["module.dict"])
        values = self._looked_up(namespace, MODULE_ATTRIBUTES)
        if values is None:
            values = self._scanned(namespace)
        for attribute, v in values.items():
            if self.obj.type_name(v) == "str":
                limit = MAX_NAME_CHARS if attribute == "__file__" else MAX_VERSION_CHARS
                entry["file" if attribute == "__file__" else "version"] = self.obj.unicode(v, limit)
        return entry

    def _scanned(self, namespace: int) -> dict[str, int]:
        """MODULE_ATTRIBUTES' values in a namespace, read entry by entry (and the keys found
        learned for _looked_up)."""
        values: dict[str, int] = {}
        for k, v in self.dict_items(namespace):
            attribute = self.short_name(k, (8, 11))
            if attribute in MODULE_ATTRIBUTES:
                values[attribute] = v
                if attribute not in self._keys:
                    key_hash = self.mem.i64(k + self.L["unicode.length"] + 8)  # PyASCIIObject.hash
                    if key_hash != -1:
                        self._keys[attribute] = (k, key_hash)
        return values

    def _looked_up(self, namespace: int, names: tuple[str, ...]) -> dict[str, int] | None:
        """The values of names in a namespace found as CPython's own lookup finds them (a few
        reads instead of one or two per entry: a module's namespace has dozens); None when a
        name's hash is not known yet or the table cannot be probed (the caller scans it)."""
        if any(n not in self._keys for n in names):
            return None
        try:
            table = self.dict_table(namespace)
            if table is None:
                return {}  # a split table: never a module's namespace (as dict_items)
            values = {}
            for n in names:
                value = self._probe(table, n)
                if value:
                    values[n] = value
            return values
        except ReadError:
            return None

    def _probe(self, table: DictTable, name: str) -> int:
        """The value of the str key `name` (0: absent), probing as CPython's lookdict does."""
        size, width, indices, entries, entry_size, nentries, hashed = table
        if width not in (1, 2, 4, 8):
            raise ReadError(f"dict index width {width}")
        known_key, key_hash = self._keys[name]
        mask = size - 1
        perturb = key_hash & 0xFFFFFFFFFFFFFFFF
        i = perturb & mask
        for _ in range(size):
            ix = int.from_bytes(self.mem.read(indices + i * width, width), "little", signed=True)
            if ix == -1:  # DKIX_EMPTY: not in the table
                return 0
            if ix >= nentries or ix < -2:
                raise ReadError(f"dict index {ix} out of range")
            if ix >= 0:
                raw = self.mem.read(entries + ix * entry_size, entry_size)
                if hashed:
                    entry_hash, key, value = struct.unpack_from("<qQQ", raw)
                else:
                    (key, value), entry_hash = struct.unpack_from("<QQ", raw), None
                if key == known_key:
                    return value
                if key and entry_hash in (None, key_hash) and self._same_str(key, name, key_hash):
                    return value
            perturb >>= 5
            i = (i * 5 + perturb + 1) & mask
        raise ReadError("dict probe did not end")

    def _same_str(self, key: int, name: str, key_hash: int) -> bool:
        """Whether a key (another object than the one learned) is the str `name`."""
        length_at = key + self.L["unicode.length"]
        if self.mem.i64(length_at + 8) != key_hash or self.mem.i64(length_at) != len(name):
            return False
        return self.obj.type_name(key) == "str" and self.obj.unicode(key, len(name)) == name


# --------------------------------------------------------------------------- entry point


def _choose_layout(
    target: Target,
    mem: Memory,
    runtime: int,
    hint: tuple[int, int] | None,
    warnings: list[str],
    prefer_hint: bool = False,
) -> Layout | None:
    eval_address = target.symbol_address("_PyEval_EvalFrameDefault")
    exported = read_debug_offsets(mem, runtime)
    if exported is not None:
        return _exported_layout(target, exported, eval_address, warnings)
    version: tuple[int, ...] | None = None
    if prefer_hint:
        version = hint
    if version is None:
        address = target.symbol_address("Py_Version")
        if address is not None:
            try:
                version = hex_version(mem.u32(address))
            except ReadError:
                version = None
    if version is None:
        version = hint or _version_from_names(target)
    if version is None:
        warnings.append("cannot tell the Python version (no Py_Version, no libpython3.X); assuming 3.10")
        version = (3, 10)
    minor = tuple(version[:2])
    if minor not in TABLES or minor not in SHAPES:
        warnings.append(f"Python {_dotted(version)} is not supported by the frame walker")
        return None
    offsets = dict(TABLES[minor])
    source = "table"
    derived = dwarf_layout(target, minor, eval_address)
    if derived:
        source = "dwarf"
        offsets.update(derived)
    layout = Layout(version, offsets, source)
    layout.dwarf = derived
    return layout


def _exported_layout(target: Target, exported: DebugOffsets, eval_address: int | None, warnings: list[str]) -> Layout:
    """The layout of a 3.13+ interpreter: its own _Py_DebugOffsets over the tabled layout of its
    build (and its DWARF, where the target reads it), which fill what the block does not export;
    the table alone where the block does not check out."""
    minor = exported.version[:2]
    tabled, offsets = tabled_layout(minor, exported.free_threaded)
    derived = dwarf_layout(target, tabled, eval_address, exported.free_threaded)
    offsets.update(derived)
    if exported.read_as != minor:
        warnings.append(
            f"Python {_dotted(exported.version)} is newer than the frame walker's layouts:"
            f" read as {_dotted(exported.read_as)}, as far as its structures are unchanged"
        )
    if exported.problem:
        build = _dotted(tabled) + ("t" if exported.free_threaded else "")
        warnings.append(
            f"the interpreter's own structure offsets (_Py_DebugOffsets) are damaged ({exported.problem});"
            f" read with CPython {build}'s tabled layout"
        )
        source = "dwarf" if derived else "table"
    else:
        offsets.update(exported.offsets)
        source = "debug-offsets"
    layout = Layout(exported.version, offsets, source, exported.free_threaded, shape_of=tabled)
    layout.dwarf = derived
    layout.debug_offsets = exported.offsets
    return layout


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(v) for v in version)


def walk(target: Target, options: dict) -> dict:
    """The walker's document: version, layout, every Python thread's frames, warnings."""
    result: dict = {"format": FORMAT, "python_version": None, "layout": None, "warnings": [], "threads": []}
    warnings: list[str] = result["warnings"]
    result["pid"] = target.pid() or None
    mem = Memory(target)
    # A runtime found by the host (coreanalyze.python.pyruntime scans the core when the interpreter's
    # files are not here) wins over the symbol: a symbol then comes from some other build.
    runtime = options.get("runtime") or target.symbol_address("_PyRuntime")
    if runtime is None:
        warnings.append("no _PyRuntime symbol: not a CPython 3.10+ process, or its libpython is missing")
        return result
    try:
        layout = _choose_layout(
            target, mem, runtime, options.get("version_hint"), warnings, prefer_hint=bool(options.get("runtime"))
        )
    except ReadError as e:
        warnings.append(f"cannot read the interpreter's runtime state: {e}")
        return result
    if layout is None:
        return result
    result["python_version"] = _dotted(layout.version)
    result["layout"] = layout.source
    result["free_threaded"] = layout.free_threaded
    if options.get("show_layout"):
        result["offsets"] = layout.off
        result["table"] = TABLES.get(layout.minor, {})
        result["dwarf"] = layout.dwarf
        result["debug_offsets"] = layout.debug_offsets
        return result
    walker = Walker(mem, layout, runtime)
    lwps = target.thread_lwps()
    locals_tid = options.get("locals_tid")
    locals_frames = options.get("locals_frames", DEFAULT_LOCALS_FRAMES) if options.get("locals") else 0
    threads: list[dict] = []
    interpreters: list[int] = []
    try:
        interpreters = walker.interpreters()
        if not interpreters:
            warnings.append("the interpreter list is empty (the process had not started Python or had finalized it)")
        gil_range = walker.gil_range(interpreters[0]) if interpreters else None
        if gil_range is not None:
            result["gil"] = {"address": gil_range[0], "size": gil_range[1] - gil_range[0]}
        if interpreters:
            result["gil_enabled"] = walker.gil_enabled(interpreters[0])
        for interp in interpreters:
            locked, holder = walker.gil(interp)
            try:
                interp_id = walker.mem.i64(interp + layout["interp.id"])
            except (ReadError, KeyError):
                interp_id = None
            for ts in walker.thread_states(interp):
                thread = {"tstate": ts, "interpreter": interp_id, "tid": None, "thread_id": None, "frames": []}
                try:
                    thread["thread_id"] = walker.mem.u64(ts + layout["tstate.thread_id"])
                    if layout.has("tstate.native_thread_id"):
                        thread["tid"] = walker.mem.u64(ts + layout["tstate.native_thread_id"]) or None
                except ReadError as e:
                    warnings.append(f"thread state 0x{ts:x}: {e}")
                thread["holds_gil"] = None if locked is None else bool(locked and holder == ts)
                threads.append(thread)
        _assign_lwps(mem, threads, set(lwps), warnings)
        for thread in threads:
            wants_locals = locals_frames and (locals_tid is None or thread["tid"] == locals_tid)
            frames, problem = walker.frames(thread["tstate"], locals_frames if wants_locals else 0)
            thread["frames"] = frames
            if problem:
                warnings.append(f"thread {thread['tid'] or '?'}: {problem}")
    except BudgetExceeded as e:
        warnings.append(str(e))
    except ReadError as e:
        warnings.append(f"interpreter state unreadable: {e}")
    result["threads"] = threads
    if options.get("imports") and interpreters:
        # After the frames: what the process had imported must never cost it its stacks.
        try:
            result["imports"] = Imports(walker).top_level(interpreters[0])
        except (ReadError, BudgetExceeded) as e:
            warnings.append(f"sys.modules unreadable: {e}")
    warnings.extend(walker.warnings)
    gil_holders = [t["tid"] for t in threads if t.get("holds_gil")]
    result["gil_holder"] = gil_holders[0] if gil_holders else None
    return result


def _assign_lwps(mem: Memory, threads: list[dict], lwps: set[int], warnings: list[str]) -> None:
    unresolved = [t for t in threads if t["tid"] not in lwps and t["thread_id"]]
    if unresolved and lwps:
        mapping = map_thread_ids(mem, [t["thread_id"] for t in unresolved], lwps)
        for t in unresolved:
            t["tid"] = mapping.get(t["thread_id"], t["tid"])
    for t in threads:
        if lwps and t["tid"] not in lwps:
            warnings.append(
                f"Python thread state 0x{t['tstate']:x} matches no thread of the core"
                " (a thread that had exited, or a corrupt state)"
            )


def parse_args(argv: list[str]) -> dict:
    """Options of the MI command; ValueError or StopIteration on bad arguments."""
    options: dict = {}
    it = iter(argv)
    for arg in it:
        if arg == "--locals":
            options["locals"] = True
        elif arg == "--locals-tid":
            options["locals_tid"] = int(next(it))
        elif arg == "--locals-frames":
            options["locals_frames"] = max(0, min(int(next(it)), MAX_FRAMES))
        elif arg == "--python-version":
            major, minor = next(it).split(".")[:2]
            options["version_hint"] = (int(major), int(minor))
        elif arg == "--runtime":
            options["runtime"] = int(next(it), 0)
        elif arg == "--imports":
            options["imports"] = True
        elif arg == "--show-layout":
            options["show_layout"] = True
        else:
            raise UnknownArgument(f"unknown argument {arg!r}")
    return options
