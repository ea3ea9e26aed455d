"""coreanalyze's commands for an interactive gdb session on a core.

    (gdb) source /path/to/gdb_scripts/coreanalyze.py
    (gdb) py-stacks [all]     native frames with the Python frames interleaved (the crashing
                              thread, or every thread with `all`)
    (gdb) ca-verdict          this core's verdict, as `coreanalyze CORE` prints it

py-stacks needs nothing but this directory: the CPython walker (pywalker/) reads the
interpreter's state through gdb, only memory reads, nothing runs in the process. ca-verdict runs
the `coreanalyze` program (set its path with `set coreanalyze-program PATH`) on the core and
executable gdb has open; its HTML report goes to a temporary directory, named at the end.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile

import gdb  # type: ignore[import-not-found]  # only exists inside gdb

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from pystacks import GdbTarget  # noqa: E402  (also registers the MI command)
from pywalker import walk  # noqa: E402

# Frames of the C function that runs one activation of the bytecode loop (`.cold` parts too).
EVAL_FRAME = re.compile(r"^_PyEval_EvalFrameDefault(?:\.cold(?:\.\d+)?)?$")
MAX_NATIVE_FRAMES = 256
VERDICT_TIMEOUT = 600


def _native_frames(thread) -> list[tuple[int, str | None, str | None]]:
    """(pc, function, library) of a thread's frames, innermost first."""
    thread.switch()
    out = []
    frame = gdb.newest_frame()
    while frame is not None and len(out) < MAX_NATIVE_FRAMES:
        try:
            pc = frame.pc()
            name = frame.name()
            library = gdb.solib_name(pc) or gdb.current_progspace().filename
        except gdb.error:
            break
        out.append((pc, name, os.path.basename(library) if library else None))
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


def _python_line(frame: dict) -> str:
    where = f"{frame.get('file') or '?'}:{frame.get('line') or '?'}"
    return f"(Python) {frame.get('function') or '???'} at {where}"


def interleaved(native: list[tuple[int, str | None, str | None]], python: list[dict]) -> list[str]:
    """Lines of one thread: each activation's Python frames just inside the evaluation-loop
    frame that runs it; with no such frame (a stripped interpreter), the Python frames first."""
    by_group: dict[int, list[dict]] = {}
    for f in python:
        by_group.setdefault(f.get("group", 0), []).append(f)
    groups = sorted(by_group)
    lines: list[str] = []
    if not any(name and EVAL_FRAME.match(name) for _, name, _ in native):
        lines += [_python_line(f) for f in python]
        groups = []
    for pc, name, library in native:
        if name and EVAL_FRAME.match(name) and groups:
            lines += [_python_line(f) for f in by_group[groups.pop(0)]]
        lines.append(f"0x{pc:016x} in {name or '??'}" + (f" ({library})" if library else ""))
    for group in groups:
        lines += [_python_line(f) for f in by_group[group]]
    return lines


class PyStacks(gdb.Command):
    """Native frames with the Python frames interleaved: py-stacks [all]."""

    def __init__(self) -> None:
        super().__init__("py-stacks", gdb.COMMAND_STACK)

    def invoke(self, argument: str, from_tty: bool) -> None:
        inferior = gdb.selected_inferior()
        selected = gdb.selected_thread()
        if selected is None:
            raise gdb.GdbError("py-stacks: no process or core is loaded")
        threads = inferior.threads() if argument.strip() == "all" else [selected]
        try:
            document = walk(GdbTarget(), {})
        except Exception as e:  # noqa: BLE001 - a broken core must never break the session
            document = {"threads": [], "warnings": [f"Python frame walk failed: {type(e).__name__}: {e}"]}
        python = {t.get("tid"): t.get("frames") or [] for t in document.get("threads", [])}
        try:
            for thread in sorted(threads, key=lambda t: t.num):
                lwp = thread.ptid[1]
                gdb.write(f"\nThread {thread.num} (LWP {lwp})\n")
                for i, line in enumerate(interleaved(_native_frames(thread), python.get(lwp, []))):
                    gdb.write(f"  #{i:<3} {line}\n")
        finally:
            selected.switch()
        for warning in document.get("warnings", []):
            gdb.write(f"warning: {warning}\n")


class CoreanalyzeProgram(gdb.Parameter):
    """The coreanalyze program ca-verdict runs."""

    set_doc = "Set the coreanalyze program ca-verdict runs."
    show_doc = "Show the coreanalyze program ca-verdict runs."

    def __init__(self) -> None:
        super().__init__("coreanalyze-program", gdb.COMMAND_DATA, gdb.PARAM_STRING)
        self.value = "coreanalyze"


def _core_file() -> str | None:
    text = gdb.execute("info target", to_string=True)
    m = re.search(r"Local core dump file:\s*`(.+)', file type", text)
    return m.group(1) if m else None


class CaVerdict(gdb.Command):
    """This core's verdict, as `coreanalyze CORE` prints it."""

    def __init__(self) -> None:
        super().__init__("ca-verdict", gdb.COMMAND_STATUS)

    def invoke(self, argument: str, from_tty: bool) -> None:
        core = _core_file()
        if core is None:
            raise gdb.GdbError("ca-verdict: gdb has no core file open")
        command = shlex.split(_PROGRAM.value or "coreanalyze") + [core]
        executable = gdb.current_progspace().filename
        if executable:
            command += ["--python", executable]
        # The report stays for the user to open: the verdict's last line names it.
        report = os.path.join(tempfile.mkdtemp(prefix="coreanalyze-verdict-"), "report.html")
        try:
            run = subprocess.run(
                [*command, "-o", report], capture_output=True, text=True, timeout=VERDICT_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise gdb.GdbError(f"ca-verdict: cannot run {command[0]}: {e}") from None
        gdb.write(run.stdout)
        if run.stderr:
            gdb.write(run.stderr)


for _command in (PyStacks, CaVerdict):
    try:
        _command()
    except RuntimeError:
        pass  # registered by an earlier `source` of this file
_PROGRAM = CoreanalyzeProgram()
