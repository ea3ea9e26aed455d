"""Names for the locks of a hang: a mutex that is a global or static variable has a symbol
(`accounts_lock`) in the symbol table of the module it lives in (the Process's symbols)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coreanalyze.process.process import Process



def lock_symbol(address: int | None, process: Process | None) -> str | None:
    """The variable at address ('accounts_lock', 'table+0x10'), when a module's symbol table
    names it."""
    if address is None or process is None:
        return None
    found = process.symbol_at(address, kind="object")
    if found is None or found.start is None:
        return None
    return found.name if address == found.start else f"{found.name}+{address - found.start:#x}"
