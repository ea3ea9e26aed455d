"""--fetch: the crashed process's own site-packages libraries, from the wheels they came in.

A library that is missing or different here but was loaded from a site-packages tree came
from a wheel. The process's sys.modules says which distribution and version (imported.py);
pip downloads that wheel with the user's own configuration (index URL, proxy, cache); each
library is taken out of it only when it is the very file the core mapped (verify.py), kept in
a cache by that identity, and then used exactly like a --sysroot file (overlay.py).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coreanalyze.fetch.fetcher import FetchAttempt, FetchResult, fetch_missing

__all__ = ["FetchAttempt", "FetchResult", "fetch_missing"]


def __getattr__(name: str) -> Any:
    # Imported on first use: every analysis imports fetch.overlay; the fetcher and what it imports
    # (pip's wheel resolution, zipfile) are needed only when --fetch runs.
    if name in __all__:
        import importlib

        return getattr(importlib.import_module("coreanalyze.fetch.fetcher"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
