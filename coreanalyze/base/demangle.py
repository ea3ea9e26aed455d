"""The one C++ demangler: Itanium names (`_Z...`) to what people read; any other name as it is."""

from __future__ import annotations


def demangle(name: str | None, max_chars: int | None = None) -> str | None:
    """People-readable name for a symbol; names that are not mangled come back as they are.

    max_chars: longer names are left alone (pasted text may hold absurd ones). A name the
    demangler rejects (corrupt, from a damaged core) also comes back unchanged.
    """
    if not name or not name.startswith("_Z") or (max_chars is not None and len(name) > max_chars):
        return name
    try:
        # Imported for the first mangled name: loading it (ctypes, the C++ runtime's demangler)
        # costs every analysis ~10 ms, and gdb hands over most names already demangled.
        import cxxfilt

        return cxxfilt.demangle(name)
    except Exception:  # noqa: BLE001 - a corrupt name must not stop the analysis
        return name
