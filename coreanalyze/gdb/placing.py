"""gdb given the objects a link map placed, for cores whose loader list gdb cannot read."""

from __future__ import annotations

from coreanalyze.process.linkmap import LinkMap


class PlacingGdb:
    """An OwnGdb (or PooledGdb) whose every opened core gets the placed objects.

    trust-readonly-sections: gdb reads code and constants from the files, not from the core,
    whose pages for them may be zeros (kept in the core's layout but without contents).
    """

    def __init__(self, gdb, link_map: LinkMap) -> None:
        self._gdb = gdb
        self._link_map = link_map

    def open_core(self, core: str, **kwargs):
        from coreanalyze.base.errors import GdbError, GdbTimeout
        from coreanalyze.gdb.session import mi_quote

        kwargs["executable"] = None  # placed below with its bias, like the libraries
        session = self._gdb.open_core(core, **kwargs)
        session.console("set trust-readonly-sections on")
        for obj in self._link_map.objects:
            if obj.local_path is None:
                continue  # placed from the core's headers: no file to read symbols from
            try:
                session.console(f"add-symbol-file -o 0x{obj.bias:x} {mi_quote(obj.local_path)}")
            except GdbTimeout:
                raise
            except GdbError:
                continue  # an unreadable file: its frames stay unnamed, the rest is placed
        return session

    def __getattr__(self, name: str):
        return getattr(self._gdb, name)
