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

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits

FORMAT = "frame-shapes"

_OFFSET = r"(?:\s*\+\s*(?:0x[0-9a-fA-F]{1,16}|\d{1,9}))?"
# module!function(+0x..) with a module that names a file (WinDbg, cdb, Visual Studio, Process
# Explorer), or any module when an offset follows ("nvcuda!cuDevicePrimaryCtxRelease+0x2a"). The
# function runs to the offset, or to the end of the line less Visual Studio's "Line 14  C++".
# A name may start with an anonymous namespace, as gdb ("(anonymous namespace)::") or MSVC
# ("`anonymous namespace'::") writes it.
_BANG_START = re.compile(r"(?:^|[\s>*])([\w.+-]{1,120})!(?=[A-Za-z_?@$~]|\(anonymous namespace\)|`anonymous namespace')")
_BANG_REST = re.compile(
    r"(?P<fn>.{1,4000}?)(?P<off>\s*\+\s*0x[0-9a-fA-F]{1,16})?"
    r"(?:\s+(?:Line|行|Zeile|ligne|línea|строка)\s*\d{1,7})?(?:\s+(?:C\+\+|C|Unknown))?\s*$"
)
_FILE_MODULE = re.compile(r"\.(?:dll|exe|pyd|sys|so(?:\.\d+)*|dylib|apk)$", re.IGNORECASE)
# A frame without a symbol: Visual Studio's "libffi.dll!00007ffff734cf7a()", and a WinDbg stack
# row's "libffi+0x4cf7a" (only after the row's backticked addresses: a module and an offset alone
# are too common a shape in other text).
_BANG_PC = re.compile(r"(?:^|[\s>*])(?P<mod>[\w.+-]{1,120}\.(?:dll|exe|pyd|sys|so(?:\.\d+)*|dylib))!(?:0x)?(?P<pc>[0-9A-Fa-f]{6,16})\(\)", re.IGNORECASE)
# ... or its bare address where no module is mapped ("0x0": a call through a null pointer). The
# row's columns are matched from its start, each bounded: `kn`'s frame number, child SP, return
# address, and !analyze's arguments between colons.
_TICKED = r"[0-9a-fA-F]{8}`[0-9a-fA-F]{8}"
_WINDBG_MODULE_OFFSET = re.compile(
    rf"\s{{0,8}}(?:[0-9a-fA-F]{{2,4}}\s{{1,8}})?{_TICKED}\s{{1,8}}{_TICKED}\s{{1,8}}(?::(?:\s{{1,4}}{_TICKED}){{1,4}}\s{{1,4}}:\s{{1,8}})?"
    r"(?:(?P<mod>[A-Za-z_][\w.+-]{0,119})\+0x[0-9a-fA-F]{1,16}|(?P<pc>0x[0-9a-fA-F]{1,16}))\s*$"
)
# How many "module!" starts of one line are tried (a line of exclamation marks is not a stack).
MAX_BANG_TRIES = 4
# "Exception thrown at 0x00007FFAE2A925F0 (tensorflow.dll) in app.exe": the pc and its module.
_PC_MODULE = re.compile(r"\b(?P<pc>0x[0-9A-Fa-f]{6,16}) \((?P<mod>[\w.+-]{1,120}\.(?:dll|exe|pyd|so(?:\.\d+)*|dylib))\)")
# lldb's module`symbol: the symbol starts right after the backtick, and an offset, a source line or
# lldb's "frame #" says it is a frame and not a word in backticks.
_BACKTICK = re.compile(
    r"(?:^|\s)(?P<mod>[\w.+-]{1,200})`(?P<fn>[^\s`][^`]*?)(?P<off>\s*\+\s*\d{1,9})?"
    r"(?:\s+at\s+(?P<file>\S+?):(?P<line>\d{1,7})(?::\d{1,5})?)?\s*$"
)
# A pc and the library it is in, told in words ("Crash location: `pc 00000000007827b0` in
# `libllm_inference_engine_jni.so`", "pc 0x7f3a.. in libfoo.so"): a summary of a tombstone's top frame.
_PC_IN = re.compile(
    r"\bpc[`'\s]{1,3}(?:0x)?(?P<pc>[0-9a-fA-F]{4,16})[`']?\s{1,3}in\s{1,3}[`']?"
    r"(?P<mod>[\w.+-]{1,200}\.(?:so(?:\.\d+)*|dylib|dll))(?![\w.])",
    re.IGNORECASE,
)
_BRACKET = re.compile(r"\[(?P<mod>[^\[\]\s+]{1,300})\+0x[0-9a-fA-F]{1,16}\]\s+(?P<fn>[^\s+]{1,2000})(?:\+0x[0-9a-fA-F]{1,16})?")
# A match starts only where a module's path or a name can start (not inside a word or path): tried
# from every character, a 16 KiB word would cost each pattern its bounded repeat per character.
_SO_PAREN = re.compile(r"(?<![^\s()\[\]])(?P<mod>[^\s()\[\]]{1,400}\.so(?:\.\d+)*)\((?P<fn>[^()\s+]{0,2000})\+0x[0-9a-fA-F]{1,16}\)")
_PC = re.compile(r"#\d{1,4}\s+pc\s+(?:0x)?[0-9a-fA-F]{4,16}\s+(?P<mod>\S{1,400})(?:\s+\(offset 0x[0-9a-fA-F]+\))?(?:\s+\((?P<fn>[^)]{1,2000}?)\+\d+\))?")
_MANAGED = re.compile(r"^\s*at\s+(?:[\w.<>$\[\]`]+\s+)?(?P<fn>[A-Za-z_$][\w$<>`]*(?:\.[\w$<>`]+)+)\((?P<args>[^)]{0,400})\)")
# A qualified C++ name with its argument list, or a mangled one, anywhere in the line.
_QUALIFIED = re.compile(r"(?<!\w)(?P<fn>(?:[A-Za-z_]\w{0,200}(?:<[^()]{0,400}?>)?::){1,12}~?[A-Za-z_]\w{0,200})\s*(?:<[^()]{0,400}>)?\s*\(")
_MANGLED = re.compile(r"(?<![\w$])(?P<fn>_Z[NZLS]?\w{4,2000})")
# A whole line that is a symbol and its offset, as a crash reporter's symbolizer prints a frame
# ("sst_print_stack_trace+36", "alert::SignalHandler(int, siginfo_t*, void*)+2069"): common
# enough in other text ("x+1") that only a run of such lines is a stack.
_SYMBOL_OFFSET = re.compile(
    r"\s{0,8}(?P<fn>[A-Za-z_~][\w:~<>,*& ]{0,400}?(?:\((?:[^()]|\([^()]*\)){0,2000}\))?(?: const)?)"
    r"\s?\+\s?(?:0x[0-9a-fA-F]{1,16}|\d{1,9})\s*"
)
# A C++ frame cut inside its template arguments (the paste ended, or a viewer cut the line): the
# return type a symbolizer prints first and the function's qualified name before the cut still say
# whose code it is.
_CUT_TEMPLATE = re.compile(r"\s{0,8}(?P<fn>(?:[A-Za-z_]\w{0,200}::){1,12}[A-Za-z_]\w{0,200}<[^()]{8,4000})")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,16}\b")
# Managed names that are a native entry point called through P/Invoke or JNI: the C API's name.
_NATIVE_ENTRY = re.compile(r"\.(TF_[A-Z]\w+|TFE_[A-Z]\w+|TfLite[A-Z]\w+)$")


def frame_on(line: str) -> tuple[fd.model.Frame, bool] | None:
    """The frame a line carries and whether its shape alone is proof, or None."""
    if "!" in line and (got := _bang(line)) is not None:
        return got, True
    if "!" in line and (m := _BANG_PC.search(line)) is not None:
        return fd.native_frame(None, pc=int(m.group("pc"), 16), module=m.group("mod")), True
    if "`" in line and "0x" in line and (m := _WINDBG_MODULE_OFFSET.match(line)) is not None:
        module = m.group("mod")
        if module is None:
            return fd.native_frame(None, pc=fd.hex_int(m.group("pc"))), True
        return fd.native_frame(None, module=module if _FILE_MODULE.search(module) else None), True
    if "0x" in line and (m := _PC_MODULE.search(line)) is not None:
        return fd.native_frame(None, pc=fd.hex_int(m.group("pc")), module=m.group("mod")), True
    if "`" in line and (m := _BACKTICK.search(line)) is not None and (m.group("off") or m.group("file") or "frame #" in line):
        line_no = int(m.group("line")) if m.group("line") else None
        return fd.native_frame(bare_name(m.group("fn")), module=m.group("mod"), file=m.group("file"), line=line_no), True
    if "[" in line and "+0x" in line and (m := _BRACKET.search(line)) is not None:
        return fd.native_frame(bare_name(m.group("fn")), module=m.group("mod")), True
    if ".so" in line and (m := _SO_PAREN.search(line)) is not None:
        return fd.native_frame(m.group("fn") or None, module=m.group("mod")), True
    if "pc" in line and " in " in line and (m := _PC_IN.search(line)) is not None:
        return fd.native_frame(None, pc=int(m.group("pc"), 16), module=m.group("mod")), True
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
    if "+" in line and (m := _SYMBOL_OFFSET.fullmatch(line)) is not None:
        return fd.native_frame(bare_name(m.group("fn"))), False
    if "::" in line and "<" in line and (m := _CUT_TEMPLATE.fullmatch(line)) is not None and line.count("<") > line.count(">"):
        return fd.native_frame(m.group("fn").rstrip()), False
    return None


def _bang(line: str) -> fd.model.Frame | None:
    for k, start in enumerate(_BANG_START.finditer(line)):
        if k >= MAX_BANG_TRIES:
            break
        module = start.group(1)
        m = _BANG_REST.match(line, start.end())
        if m is None or not (_FILE_MODULE.search(module) or m.group("off")):
            continue
        function = m.group("fn").strip()
        if module.lower().endswith(".apk"):  # an APK-embedded library: "base.apk!libfoo.so"
            return fd.native_frame(None, module=function.split()[0])
        # WinDbg names a module without its file's extension ("tensorflow_framework"): that is not
        # a library path the module rules could read, and would look like an unknown (custom-op)
        # library; the symbol says what the code is.
        return fd.native_frame(bare_name(function), module=module if _FILE_MODULE.search(module) else None)
    return None


def bare_name(function: str) -> str:
    """'abort()' -> 'abort'; 'ns::(anonymous namespace)::f<int>(int) const' -> 'ns::(anonymous
    namespace)::f<int>': the argument list is not part of the name the rules match, and a
    debugger's argument values would only get in the way."""
    name = function.strip()
    for suffix in (" const", " volatile", " &&", " &", " noexcept"):
        if name.endswith(suffix):
            name = name[: -len(suffix)].rstrip()
    k = fd.argument_list_start(name)
    return (name[:k].rstrip() or name) if k is not None else name


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
    has_stack = any(len(run) >= 2 for _, run in runs)
    for start, run in runs:
        # One frame is believed alone only when its shape is unmistakable, and a lone pc without a
        # name (an exception line's "0x.. (tensorflow.dll)") only when no stack says more.
        if len(run) < 2 and (not run[0][2] or (has_stack and run[0][1].function is None)):
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
