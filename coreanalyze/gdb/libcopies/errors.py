"""The one error of the library-copy speed work."""


class LibraryCopyError(Exception):
    """A library cannot be given to gdb as a copy without symbols (or its names reproduced):
    gdb then reads it as it is."""
