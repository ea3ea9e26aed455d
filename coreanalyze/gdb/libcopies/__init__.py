"""Making gdb fast on huge libraries: the one place for this speed work.

    copies       libraries given to gdb as cached copies without their symbol tables, and the
                 sysroot of links that serves them
    symbolfiles  the ELF layout of such a library and the small symbol files gdb gets instead
    naming       per core: which addresses gdb must name, their symbol windows, and the
                 collection of the core with them (falling back to the plain way)

Every failure here is a LibraryCopyError (errors.py): the caller then lets gdb read every
library itself, which gives the same report, slower.
"""
