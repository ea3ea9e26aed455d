"""Runs inside gdb: attach small symbol files to the libraries gdb loaded without symbols.

MI command: -coreanalyze-add-symbol-files FILE
FILE holds JSON [[library, symbol_file, unwind_file, base, alone], ...]: each loaded objfile of
the current inferior whose file is `library` (compared by real path) gets `symbol_file` as its
separate debug file; `unwind_file` (or null), the unwind entries of a library whose copy hides
its own, is added as an object file of its own at `base` (gdb reads no unwind entries from a
separate debug file). With `alone` true, gdb was told not to read the library (it has its
sections, no object file): both files are added as object files of their own at `base`. The frame cache is then flushed so that frames are named and unwound
again. Answers {"attached": N}: the symbol files attached.
"""

import json
import os

import gdb


def _quoted(path):
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


class AddSymbolFiles(gdb.MICommand):
    def __init__(self):
        super().__init__("-coreanalyze-add-symbol-files")

    def invoke(self, argv):
        if len(argv) != 1:
            raise gdb.GdbError("usage: -coreanalyze-add-symbol-files FILE")
        with open(argv[0]) as f:
            entries = json.load(f)
        wanted = {}
        attached = 0
        loaded = {os.path.realpath(o.filename) for o in gdb.objfiles() if o.owner is None and o.filename}
        for library, symbol_file, unwind_file, base, *alone in entries:
            if alone and alone[0]:
                if os.path.realpath(str(library)) in loaded:
                    continue  # gdb read the library after all: not attached, the caller falls back
                for path in (symbol_file, unwind_file):
                    if path:
                        gdb.execute(f"add-symbol-file {_quoted(str(path))} -o {int(base or 0):#x}", to_string=True)
                attached += 1
                continue
            wanted.setdefault(os.path.realpath(str(library)), []).append((str(symbol_file), unwind_file, int(base or 0)))
        for objfile in gdb.objfiles():
            if objfile.owner is not None or not objfile.filename:
                continue  # separate debug files themselves
            for symbol_file, unwind_file, base in wanted.get(os.path.realpath(objfile.filename), ()):
                objfile.add_separate_debug_file(symbol_file)
                attached += 1
                if unwind_file:
                    gdb.execute(f"add-symbol-file {_quoted(str(unwind_file))} -o {base:#x}", to_string=True)
        gdb.execute("maintenance flush register-cache", to_string=True)
        return {"attached": str(attached)}


AddSymbolFiles()
