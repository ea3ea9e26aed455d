"""What CPython's own headers say about its structures: the source the walker's tables are
checked against.

A C program compiled against an interpreter's headers (Include/ and Include/internal/, which
pyenv installs and Debian's libpython3.X-dev ships) prints `offsetof`/`sizeof` for every key
of the walker's DWARF spec, and the bit positions of a str's state flags; with
`-DPy_GIL_DISABLED` the same headers describe the free-threaded build of that version. The
`_Py_DebugOffsets` struct is read from the header text, field by field, in declaration order.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support.require import require

# Internal headers that hold the structures the walker reads; each version has some of them.
INTERNAL_HEADERS = (
    "pycore_runtime.h",
    "pycore_interp.h",
    "pycore_interp_structs.h",
    "pycore_frame.h",
    "pycore_interpframe_structs.h",
    "pycore_gil.h",
    "pycore_dict.h",
    "pycore_code.h",
    "pycore_moduleobject.h",
    "pycore_debug_offsets.h",
)
STATE_BITS = ("kind", "compact", "ascii")


def include_dir(root: Path, minor: str) -> Path:
    """<root>/include/python3.X of an installed interpreter (pyenv) or a sysroot (/usr)."""
    return root / "include" / f"python{minor}"


def _program(include: Path, spec: dict[str, tuple[str, str | None]]) -> str:
    lines = ["#define Py_BUILD_CORE 1", '#include "Python.h"']
    lines += [f'#include "internal/{h}"' for h in INTERNAL_HEADERS if (include / "internal" / h).exists()]
    lines += ["#include <stdio.h>", "#include <stddef.h>", "#include <string.h>", "int main(void) {"]
    for key, (type_name, path) in spec.items():
        expr = f"sizeof({type_name})" if path is None else f"offsetof({type_name}, {path})"
        lines.append(f'    printf("%s %zu\\n", "{key}", (size_t)({expr}));')
    # A str's state word with one flag set at a time: the flag's lowest bit is its position.
    for bit in STATE_BITS:
        lines += [
            "    { PyASCIIObject s; unsigned int w = 0; memset(&s, 0, sizeof s);",
            f"      s.state.{bit} = 1; memcpy(&w, &s.state, sizeof w);",
            f'      printf("unicode.{bit}_bit %d\\n", __builtin_ctz(w)); }}',
        ]
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def header_layout(include: Path, spec: dict[str, tuple[str, str | None]], workdir: Path, free_threaded: bool) -> dict[str, int]:
    """key -> offset (or size) of spec, as the headers at `include` lay them out on this
    machine's compiler (x86_64), for the default or the free-threaded build."""
    cc = require("gcc")
    workdir.mkdir(parents=True, exist_ok=True)
    name = "layout-ft" if free_threaded else "layout"
    source = workdir / f"{name}.c"
    source.write_text(_program(include, spec))
    # Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>: the sysroot's
    # include directory comes after the compiler's own, so its libc headers are not taken.
    flags = ["-DPy_GIL_DISABLED=1"] if free_threaded else []
    cmd = [cc, *flags, "-I", str(include), "-idirafter", str(include.parent), "-o", str(workdir / name), str(source)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([str(workdir / name)], check=True, capture_output=True, text=True).stdout
    return {key: int(value) for key, value in (line.split() for line in out.splitlines())}


_STRUCT_OPEN = re.compile(r"^\s*struct\s*(\w*)\s*\{")
_STRUCT_CLOSE = re.compile(r"^\s*\}\s*(\w+)\s*;")
_FIELD = re.compile(r"^\s*uint64_t\s+(\w+)\s*;")


def debug_offsets_fields(include: Path) -> tuple[str, ...]:
    """The uint64 fields of _Py_DebugOffsets after its cookie and version, as "section.field"
    (top-level fields by their own name), in declaration order."""
    for name in ("pycore_debug_offsets.h", "pycore_runtime.h"):
        header = include / "internal" / name
        if header.exists() and "typedef struct _Py_DebugOffsets" in header.read_text():
            text = header.read_text()
            break
    else:
        raise FileNotFoundError(f"no _Py_DebugOffsets in the headers at {include}")
    body = text.split("typedef struct _Py_DebugOffsets {", 1)[1].split("} _Py_DebugOffsets;", 1)[0]
    fields: list[str] = []
    section: list[str] | None = None  # fields of the nested struct being read, if any
    for line in body.splitlines():
        if _STRUCT_OPEN.match(line):
            section = []
        elif (m := _STRUCT_CLOSE.match(line)) and section is not None:
            fields += [f"{m.group(1)}.{f}" for f in section]
            section = None
        elif m := _FIELD.match(line):
            (fields if section is None else section).append(m.group(1))
    return tuple(f for f in fields if f != "version")
