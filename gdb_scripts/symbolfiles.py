"""Runs inside gdb: attach small symbol files to the libraries gdb loaded without symbols.

MI command: -coreanalyze-add-symbol-files FILE
FILE holds JSON [[library, symbol_file], ...]: each loaded objfile of the current inferior whose
file is `library` (compared by real path) gets `symbol_file` as its separate debug file, and
the frame cache is flushed so that frames are named again. Answers {"attached": N}.
"""

import json
import os

import gdb


class AddSymbolFiles(gdb.MICommand):
    def __init__(self):
        super().__init__("-coreanalyze-add-symbol-files")

    def invoke(self, argv):
        if len(argv) != 1:
            raise gdb.GdbError("usage: -coreanalyze-add-symbol-files FILE")
        with open(argv[0]) as f:
            pairs = json.load(f)
        wanted = {}
        for library, symbol_file in pairs:
            wanted.setdefault(os.path.realpath(str(library)), []).append(str(symbol_file))
        attached = 0
        for objfile in gdb.objfiles():
            if objfile.owner is not None or not objfile.filename:
                continue  # separate debug files themselves
            for symbol_file in wanted.get(os.path.realpath(objfile.filename), ()):
                objfile.add_separate_debug_file(symbol_file)
                attached += 1
        gdb.execute("maintenance flush register-cache", to_string=True)
        return {"attached": str(attached)}


AddSymbolFiles()
