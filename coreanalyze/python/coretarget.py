"""The CPython walker's Target over the core file itself, with no debugger.

Memory comes from the Process (coreanalyze.process.process): the core's own segments, and what the
kernel did not dump (read-only file-backed pages: type names and other strings in .rodata) from
the crashed build's file mapped there, as a debugger does. Global symbols come from the dynamic and static symbol
tables of the executable and libpython, shifted by their load bias. Type offsets from DWARF
are not read here: the walker falls back to its tables and to 3.13+'s own `_Py_DebugOffsets`.

    with read_core(path) as notes:
        document = walk_core(notes, module_table(notes, executable=exe))
"""

from __future__ import annotations

from coreanalyze.base import background, model
from coreanalyze.base.resources import gdb_script_module
from coreanalyze.corefile.shrunk import GRAIN
from coreanalyze.process.process import Process
from coreanalyze.python.pywalk import WalkOptions, WalkResult, parse_walk_document

# The walker is one of the files loaded into gdb; here it runs in-process.
pywalker = gdb_script_module("pywalker")
ReadError, walk = pywalker.ReadError, pywalker.walk

class CoreTarget:
    """Memory, symbols and threads of a core, read in-process (see pywalker.Target)."""

    def __init__(self, process: Process, modules: list[model.Module], *, shrunk: bool | None = None) -> None:
        """shrunk: whether the core is one coreanalyze shrank (None: its marker is looked for)."""
        self._notes = process.notes
        if shrunk is None:
            from coreanalyze.corefile.shrunk import marker_of_core

            shrunk = marker_of_core(process.notes.path) is not None
        self._shrunk = shrunk
        # Memory: the core, then the crashed build's files mapped where it has no bytes; symbols:
        # the Process's (its interpreter files).
        if list(modules) != process.modules:
            process.set_modules(modules)
        self._process = process
        self._paths = [m.path for m in modules]

    # -- Target -----------------------------------------------------------------------------

    @property
    def read_block(self) -> int:
        """The walker's read unit: a page, but a shrink's grain while the analysis's reads are
        recorded (coreanalyze.shrink keeps what was read, and a page per object followed would
        keep several times what the objects hold) and in a shrunk core (which holds grains of a
        page: a page read across them would come from the mapped file, where no byte was kept)."""
        return GRAIN if self._shrunk or self._process.recording else pywalker.CACHE_BLOCK

    def read(self, address: int, size: int) -> bytes:
        data = self._process.read(address, size)
        if data is None:
            raise ReadError(f"cannot read {size} bytes at 0x{address:x}")
        return data

    def symbol_address(self, name: str) -> int | None:
        return self._process.symbol_address(name)

    def object_files(self) -> list[str]:
        return list(self._paths)

    def type_offsets(self, spec: dict[str, tuple[str, str | None]], near: int) -> dict[str, int]:
        return {}

    def thread_lwps(self) -> list[int]:
        return [t.tid for t in self._notes.threads if t.tid]

    def pid(self) -> int | None:
        return self._notes.pid


def walk_core(process: Process, modules: list[model.Module], options: dict | None = None) -> dict:
    """The walker's document for a core, read without a debugger. options may carry a runtime
    located in the core ("runtime", "version_hint": see coreanalyze.python.pyruntime)."""
    return walk(CoreTarget(process, modules), options or {})


def has_runtime_symbol(process: Process, modules: list[model.Module]) -> bool:
    """Whether the crashed build's own interpreter files here name _PyRuntime."""
    return CoreTarget(process, modules).symbol_address("_PyRuntime") is not None


class InProcessWalker:
    """The CPython walker run in-process on a Process (a PythonWalker, coreanalyze.python.pywalk), with no
    debugger. A walk can be started in the background (start) and is then waited for when the
    same options are asked for."""

    def __init__(self, process: Process, modules: list[model.Module], *, shrunk: bool | None = None) -> None:
        self._target = CoreTarget(process, modules, shrunk=shrunk)
        self._started: dict[WalkOptions, background.Job] = {}

    def start(self, options: WalkOptions) -> None:
        if options not in self._started:
            self._started[options] = background.start("python-walk", self._walk, options)

    def python_stacks(self, options: WalkOptions) -> WalkResult:
        job = self._started.pop(options, None)
        if job is not None:
            result = job.result()
            if result is not None:
                return result
        return self._walk(options)  # not started, or it failed: here, where errors surface

    def wait(self) -> None:
        """Wait for walks started and not asked for (they read the core, which is closed after)."""
        for job in self._started.values():
            job.wait()

    def _walk(self, options: WalkOptions) -> WalkResult:
        try:
            document = walk(self._target, walker_options(options))
        except Exception as e:  # noqa: BLE001 - a broken core must not end the analysis (as in gdb)
            document = {"format": pywalker.FORMAT, "threads": [], "warnings": [f"Python frame walk failed: {type(e).__name__}: {e}"]}
        # Checked and typed as a walk in gdb is (the document is the same, not sent as JSON).
        return parse_walk_document(document)


def walker_options(options: WalkOptions) -> dict:
    """The walker's own options (pywalker.walk), as its gdb command parses them from its arguments."""
    out: dict = {}
    if options.with_locals:
        out["locals"] = True
        out["locals_frames"] = max(0, min(int(options.locals_frames), pywalker.MAX_FRAMES))
        if options.locals_tid is not None:
            out["locals_tid"] = int(options.locals_tid)
    if options.version_hint is not None:
        out["version_hint"] = tuple(options.version_hint[:2])
    if options.runtime is not None:
        out["runtime"] = int(options.runtime)
    if options.imports:
        out["imports"] = True
    if options.show_layout:
        out["show_layout"] = True
    return out
