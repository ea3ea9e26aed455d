"""Frames read by their shape, whatever tool printed them: the way in for every text that no
format parser claimed (WinDbg's `kn`, Visual Studio's call-stack window, an IDE's copy, a crash
SDK's own layout, a log viewer's columns in front of a tombstone, a hand-made list).

A line is a frame when it carries one of these shapes, wherever it stands in the line:

    ntdll!NtWaitForSingleObject+0x14                module!function+0x..      (WinDbg, cdb, VS)
    ucrtbase.dll!abort()  行 682  C++                module.dll!function(args)
    libmetal_plugin.dylib`Op::Compute(...) + 2768   module`function          (lldb, Xcode)
    C  [libtensorflow.so+0x9b03dd]  sym+0x1d        [module+0x..] symbol      (JVM hs_err)
    libfoo.so(_ZN3fooEv+0x1c) [0x7f..]              lib.so(symbol+0x..)       (backtrace_symbols)
    #00 pc 0001b2c4  /data/app/base.apk!libx.so     pc offset + library       (tombstone in any log)
    at Tensorflow.c_api.TF_Foo(Handle, String)       at Namespace.Type.Method(args)  (.NET, JVM)
    0x7FFAE2A925F0 (tensorflow.dll)                 an address and its module  (VS exception line)
    0x7f.. in tensorflow::OpKernel::Compute(...)    qualified or mangled C++ name

Runs of frame lines make a stack, innermost first. A single line counts only when its shape is
unmistakable (a module and a symbol); a qualified name alone needs company. The format parsers
run first and claim what they know; what is left is read here.
"""

from __future__ import annotations

import re

from . import findings as fd
from . import limits

FORMAT = "frame-shapes"

_OFFSET = r"(?:\s*\+\s*(?:0x[0-9a-fA-F]{1,16}|\d{1,9}))?"
# module!function(+0x..) with a module that names a file (WinDbg, cdb, Visual Studio, Process Explorer).
_BANG = re.compile(
    r"(?:^|[\s>*])(?P<mod>[\w.+-]{1,120}\.(?:dll|exe|pyd|sys|so(?:\.\d+)*|dylib))!(?P<fn>[A-Za-z_?@$~][^\s(+]{0,600}?(?:\([^)]{0,600}\))?)" + _OFFSET + r"(?=\s|$)"
    # WinDbg also prints the module without its extension: "nvcuda!cuDevicePrimaryCtxRelease+0x2a".
    r"|(?:^|\s)(?P<mod2>[A-Za-z_][\w.-]{0,120})!(?P<fn2>[A-Za-z_?@$~][^\s(+]{0,600}?)\s*\+\s*0x[0-9a-fA-F]{1,16}(?=\s|$)"
)
# "Exception thrown at 0x00007FFAE2A925F0 (tensorflow.dll) in app.exe": the pc and its module.
_PC_MODULE = re.compile(r"\b(?P<pc>0x[0-9A-Fa-f]{6,16}) \((?P<mod>[\w.+-]{1,120}\.(?:dll|exe|pyd|so(?:\.\d+)*|dylib))\)")
# lldb's module`symbol: the symbol starts right after the backtick, and an offset, a source line or
# lldb's "frame #" says it is a frame and not a word in backticks.
_BACKTICK = re.compile(
    r"(?:^|\s)(?P<mod>[\w.+-]{1,200})`(?P<fn>[^\s`][^`]*?)(?P<off>\s*\+\s*\d{1,9})?"
    r"(?:\s+at\s+(?P<file>\S+?):(?P<line>\d{1,7})(?::\d{1,5})?)?\s*$"
)
_BRACKET = re.compile(r"\[(?P<mod>[^\]\s+]{1,300})\+0x[0-9a-fA-F]{1,16}\]\s+(?P<fn>[^\s+]{1,2000})(?:\+0x[0-9a-fA-F]{1,16})?")
_SO_PAREN = re.compile(r"(?P<mod>[^\s()\[\]]{1,400}\.so(?:\.\d+)*)\((?P<fn>[^()\s+]{0,2000})\+0x[0-9a-fA-F]{1,16}\)")
_PC = re.compile(r"#\d{1,4}\s+pc\s+(?:0x)?[0-9a-fA-F]{4,16}\s+(?P<mod>\S{1,400})(?:\s+\(offset 0x[0-9a-fA-F]+\))?(?:\s+\((?P<fn>[^)]{1,2000}?)\+\d+\))?")
_MANAGED = re.compile(r"^\s*at\s+(?:[\w.<>$\[\]`]+\s+)?(?P<fn>[A-Za-z_$][\w$<>`]*(?:\.[\w$<>`]+)+)\((?P<args>[^)]{0,400})\)")
# A qualified C++ name with its argument list, or a mangled one, anywhere in the line.
_QUALIFIED = re.compile(r"(?P<fn>(?:[A-Za-z_]\w{0,200}(?:<[^()]{0,400}?>)?::){1,12}~?[A-Za-z_]\w{0,200})\s*(?:<[^()]{0,400}>)?\s*\(")
_MANGLED = re.compile(r"(?<![\w$])(?P<fn>_Z[NZLS]?\w{4,2000})")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")
# Managed names that are a native entry point called through P/Invoke or JNI: the C API's name.
_NATIVE_ENTRY = re.compile(r"\.(TF_[A-Z]\w+|TFE_[A-Z]\w+|TfLite[A-Z]\w+)$")


def frame_on(line: str) -> tuple[fd.model.Frame, bool] | None:
    """The frame a line carries and whether its shape alone is proof, or None."""
    if "!" in line and (m := _BANG.search(line)) is not None:
        module = m.group("mod") or m.group("mod2")
        function = m.group("fn") or m.group("fn2")
        if module.endswith(".apk"):
            return fd.native_frame(None, module=function), True
        return fd.native_frame(_bare(function), module=module), True
    if "0x" in line and (m := _PC_MODULE.search(line)) is not None:
        return fd.native_frame(None, pc=fd.hex_int(m.group("pc")), module=m.group("mod")), True
    if "`" in line and (m := _BACKTICK.search(line)) is not None and (m.group("off") or m.group("file") or "frame #" in line):
        line_no = int(m.group("line")) if m.group("line") else None
        return fd.native_frame(_bare(m.group("fn")), module=m.group("mod"), file=m.group("file"), line=line_no), True
    if "[" in line and "+0x" in line and (m := _BRACKET.search(line)) is not None:
        return fd.native_frame(_bare(m.group("fn")), module=m.group("mod")), True
    if ".so" in line and (m := _SO_PAREN.search(line)) is not None:
        return fd.native_frame(m.group("fn") or None, module=m.group("mod")), True
    if " pc " in line and (m := _PC.search(line)) is not None:
        module = m.group("mod")
        if "!" in module:  # an APK-embedded library: "base.apk!libfoo.so"
            module = module.rsplit("!", 1)[1]
        return fd.native_frame(m.group("fn"), module=module), True
    if "at " in line and (m := _MANAGED.match(line)) is not None:
        name = m.group("fn")
        native = _NATIVE_ENTRY.search(name)
        return fd.native_frame(native.group(1) if native else name), bool(native)
    if "(" in line and "::" in line and (m := _QUALIFIED.search(line)) is not None:
        return fd.native_frame(m.group("fn"), pc=_address(line)), False
    if "_Z" in line and (m := _MANGLED.search(line)) is not None:
        return fd.native_frame(m.group("fn"), pc=_address(line)), False
    return None


def _bare(function: str) -> str:
    """'abort()' -> 'abort'; 'f(int) const' -> 'f': the argument list is not part of the name
    the rules match, and a debugger's argument values would only get in the way."""
    function = function.strip()
    depth = 0
    for k, ch in enumerate(function):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0 and k > 0 and not function.startswith("(anonymous"):
            return function[:k].strip()
    return function


def _address(line: str) -> int | None:
    m = _ADDRESS.search(line)
    return fd.hex_int(m.group(0)) if m else None


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    runs: list[tuple[int, list[tuple[int, fd.model.Frame, bool]]]] = []
    current: list[tuple[int, fd.model.Frame, bool]] = []
    start = 0
    for i, line in enumerate(lines):
        got = frame_on(line) if not claimed[i] and line.strip() else None
        if got is not None:
            if not current:
                start = i
            current.append((i, got[0], got[1]))
            continue
        if current:
            runs.append((start, current))
            current = []
    if current:
        runs.append((start, current))
    threads: list[tuple[int, fd.TextThread]] = []
    for start, run in runs:
        # One frame is believed alone only when its shape is unmistakable.
        if len(run) < 2 and not run[0][2]:
            continue
        thread = fd.TextThread()
        for k, frame, _ in run:
            thread.add(frame)
            claimed[k] = 1
        threads.append((start, thread))
        if len(threads) >= limits.MAX_THREADS:
            break
    if not threads:
        return []
    finding = fd.Finding(FORMAT, threads[0][0])
    crashed, _ = fd.guess_crashed([t for _, t in threads])
    if crashed is not None:
        crashed.crashed = True
    for _, thread in threads:
        finding.add_thread(thread)
    return [finding]
