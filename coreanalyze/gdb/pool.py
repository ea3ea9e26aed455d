"""gdb kept running between cores, so that libraries read for one core serve the next.

Opening a core in a gdb that already holds a core of the same program costs a few hundredths
of a second instead of seconds: gdb shares what it read from a file (symbols, unwind tables,
DWARF indexes) among all the places that load that file. Each core gets a new inferior of its
own (`add-inferior -no-connection`, so it gets its own core target); the previous core's
inferior stays loaded until the new one is, so that its libraries stay read for the new core
to share, and is then detached and removed before the analysis lists a thread (two cores
loaded at once confuse gdb's thread library support). A gdb that fails or times out there is
replaced.

A `PooledGdb` serves one core at a time. `GdbPool` hands out up to `size` of them to concurrent
callers and replaces one that died, hit a time limit, grew past its memory budget or served
`max_cores` cores. `OwnGdb` is the same interface over a gdb started for one analysis.

    with GdbPool(size=2) as pool:
        for core in cores:
            analyze_core(core, options, gdb_pool=pool)
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from coreanalyze.base.cachedir import cache_dir
from coreanalyze.base.errors import GdbError
from coreanalyze.gdb.session import GdbSession, _plain, mi_quote

if TYPE_CHECKING:
    from coreanalyze.gdb.libraries import LibraryChoice

DEFAULT_SYSROOT = "target:"
INDEX_CACHE_DIR = "gdb-index"
DEFAULT = object()  # "the default" where None means "none"
DEFAULT_MAX_CORES = 200
DEFAULT_MAX_RSS_MB = 3072


def default_index_cache() -> str:
    """Where gdb keeps its DWARF indexes: a directory of the user cache."""
    return str(cache_dir() / INDEX_CACHE_DIR)


class OwnGdb:
    """A gdb started for one analysis; each open_core starts a fresh one.

    start_early() starts the first one in the background (gdb takes a tenth of a second to
    come up), so that it is ready when the analysis has worked out what to load into it.
    """

    def __init__(
        self,
        *,
        gdb_path: str = "gdb",
        timeout: float = 300.0,
        memory_limit_mb: int | None = 4096,
        debuginfod: bool = False,
        index_cache: str | None = None,
    ) -> None:
        self._settings = dict(
            gdb_path=gdb_path, timeout=timeout, memory_limit_mb=memory_limit_mb, debuginfod=debuginfod, index_cache=index_cache
        )
        self.session: GdbSession | None = None
        self._early: GdbSession | None = None
        self._starting: threading.Thread | None = None
        self._start_error: BaseException | None = None

    def start_early(self) -> None:
        """Start the gdb of the first open_core now, in a thread; its errors surface there."""
        if self._starting is not None or self.session is not None:
            return
        self._early = GdbSession(**self._settings)  # type: ignore[arg-type]

        def start() -> None:
            try:
                self._early.start()  # type: ignore[union-attr]
            except BaseException as e:  # noqa: BLE001 — handed to open_core, which raises it
                self._start_error = e

        self._starting = threading.Thread(target=start, name="gdb-start", daemon=True)
        self._starting.start()

    def open_core(
        self,
        core: str,
        *,
        executable: str | None = None,
        sysroot: str | None = None,
        debug_dirs: Iterable[str] = (),
        before_target: Callable[[], None] | None = None,
        libraries: LibraryChoice | None = None,
        program_debug_file: bool = True,
    ) -> GdbSession:
        early = self._take_early()
        self.close()
        if early is not None:
            session = early
            self.session = session
        else:
            session = GdbSession(**self._settings)  # type: ignore[arg-type]
            self.session = session
            session.start()
        session.load(
            core, executable=executable, sysroot=sysroot, debug_dirs=list(debug_dirs), before_target=before_target, libraries=libraries,
            program_debug_file=program_debug_file,
        )  # fmt: skip
        return session

    def _take_early(self) -> GdbSession | None:
        """The early-started gdb, once it is up (None when there is none); raises what its
        start raised."""
        if self._starting is None:
            return None
        self._starting.join()
        early, error = self._early, self._start_error
        self._starting, self._early, self._start_error = None, None, None
        if error is not None:
            if early is not None:
                early.close(at_once=True)
            raise error
        return early

    def close(self) -> None:
        # A gdb of one analysis has nothing to finish: it is ended at once, not asked to exit.
        if self._starting is not None:
            self._starting.join()
            if self._early is not None:
                self._early.close(at_once=True)
            self._starting, self._early, self._start_error = None, None, None
        if self.session is not None:
            self.session.close(at_once=True)
            self.session = None

    def __enter__(self) -> OwnGdb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PooledGdb:
    """One long-lived gdb; each open_core loads the core into a new inferior.

    The previous core's inferior stays loaded while the next core loads: gdb then finds the
    libraries the two share already open, with their symbols and indexes read (a TensorFlow
    core loads in ~40 ms instead of ~350). Right after, it is detached and removed, before any
    thread is listed: two cores loaded at once confuse gdb's thread library support ("Cannot
    find new threads"). Those two commands are sent without waiting; gdb works through them
    while the caller prepares its next command."""

    def __init__(
        self,
        *,
        gdb_path: str = "gdb",
        timeout: float = 300.0,
        memory_limit_mb: int | None = 4096,
        debuginfod: bool = False,
        index_cache: str | None = None,
        max_cores: int = DEFAULT_MAX_CORES,
        max_rss_mb: int = DEFAULT_MAX_RSS_MB,
    ) -> None:
        self._settings = dict(
            gdb_path=gdb_path, timeout=timeout, memory_limit_mb=memory_limit_mb, debuginfod=debuginfod, index_cache=index_cache
        )
        self.timeout = timeout
        self.max_cores = max_cores
        self.max_rss_mb = max_rss_mb
        self.session: GdbSession | None = None
        self.cores = 0  # cores served by the current gdb
        self.restarts = 0
        self._inferior: int | None = None  # the inferior holding the last core
        self._settled = False  # False while a core is being opened: a failure leaves gdb unusable
        self._sysroot: str | None = None
        self._debug_dirs: str | None = None
        self._default_debug_dirs = ""

    def open_core(
        self,
        core: str,
        *,
        executable: str | None = None,
        sysroot: str | None = None,
        debug_dirs: Iterable[str] = (),
        before_target: Callable[[], None] | None = None,
        libraries: LibraryChoice | None = None,
    ) -> GdbSession:
        """Load core (replacing the previous one) and return the session, ready for commands.

        before_target: called just before gdb loads the core."""
        if not self._usable():
            self._restart()
        session = self.session
        assert session is not None
        session.restart_deadline(self.timeout)
        try:
            session.finish_pending()
        except GdbError:
            # Dropping the earlier core failed or timed out: this core gets a fresh gdb.
            self._restart()
            session = self.session
            assert session is not None
        self._settled = False
        if self._inferior is None:
            number = 1  # a fresh gdb's empty first inferior
        else:
            added = session.mi("-add-inferior --no-connection").get("inferior", "")
            if not (isinstance(added, str) and added.startswith("i") and added[1:].isdigit()):
                raise GdbError(f"gdb did not add an inferior (answered {added!r})")
            number = int(added[1:])
            session.console(f"inferior {number}")
        self._configure(session, sysroot, [os.path.abspath(d) for d in debug_dirs])
        session.load(core, executable=executable, before_target=before_target, libraries=libraries)
        previous, self._inferior = self._inferior, number
        if previous is not None:
            # Detaching closes its core target; an error there is no reason to stop.
            session.send_later(f"-interpreter-exec console {mi_quote(f'detach inferiors {previous}')}", ignore_error=True)
            session.send_later(f"-interpreter-exec console {mi_quote(f'remove-inferiors {previous}')}")
        self.cores += 1
        self._settled = True
        return session

    def _configure(self, session: GdbSession, sysroot: str | None, debug_dirs: list[str]) -> None:
        # Global settings: set for every core, so that none inherits the previous core's.
        wanted_sysroot = os.path.abspath(sysroot) if sysroot else DEFAULT_SYSROOT
        if wanted_sysroot != self._sysroot:
            session.mi(f"-gdb-set sysroot {_plain(wanted_sysroot)}")
            self._sysroot = wanted_sysroot
        wanted_dirs = os.pathsep.join(debug_dirs) if debug_dirs else self._default_debug_dirs
        if wanted_dirs != self._debug_dirs:
            session.mi(f"-gdb-set debug-file-directory {_plain(wanted_dirs)}")
            self._debug_dirs = wanted_dirs

    def _usable(self) -> bool:
        if self.session is None or not self.session.alive or not self._settled:
            return False
        if self.cores >= self.max_cores:
            return False
        rss = _rss_mb(self.session.pid)
        return rss is None or rss <= self.max_rss_mb

    def _restart(self) -> None:
        if self.session is not None:
            self.restarts += 1
        self.close()
        session = GdbSession(**self._settings)  # type: ignore[arg-type]
        session.start()
        self.session = session
        self._default_debug_dirs = str(session.mi("-gdb-show debug-file-directory").get("value", ""))
        self._debug_dirs = self._default_debug_dirs
        self._sysroot = DEFAULT_SYSROOT
        self._settled = True

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None
        self._inferior = None
        self.cores = 0


class GdbPool:
    """Up to `size` PooledGdb workers shared by the analyses that lease them."""

    def __init__(
        self,
        size: int = 1,
        *,
        gdb_path: str = "gdb",
        timeout: float = 300.0,
        memory_limit_mb: int | None = 4096,
        debuginfod: bool = False,
        index_cache: str | None | object = DEFAULT,
        max_cores: int = DEFAULT_MAX_CORES,
        max_rss_mb: int = DEFAULT_MAX_RSS_MB,
    ) -> None:
        """index_cache: gdb's DWARF index cache directory (default: in the user cache; None: off)."""
        if size < 1:
            raise ValueError("a gdb pool needs at least one gdb")
        self.size = size
        self._worker_settings = dict(
            gdb_path=gdb_path,
            timeout=timeout,
            memory_limit_mb=memory_limit_mb,
            debuginfod=debuginfod,
            index_cache=default_index_cache() if index_cache is DEFAULT else index_cache,
            max_cores=max_cores,
            max_rss_mb=max_rss_mb,
        )
        self._idle: list[PooledGdb] = []
        self._all: list[PooledGdb] = []
        self._closed = False
        self._cond = threading.Condition()

    @classmethod
    def from_options(cls, options, size: int = 1) -> GdbPool:
        """A pool set up like an analysis with these AnalyzeOptions would start its gdb."""
        return cls(
            size,
            gdb_path=options.gdb,
            timeout=options.timeout,
            debuginfod=options.debuginfod,
            index_cache=default_index_cache() if getattr(options, "fast_libraries", True) else None,
        )

    @contextmanager
    def lease(self) -> Iterator[PooledGdb]:
        """A worker for one analysis; waits while all `size` workers are busy."""
        with self._cond:
            while True:
                if self._closed:
                    raise GdbError("the gdb pool is closed")
                if self._idle:
                    worker = self._idle.pop()
                    break
                if len(self._all) < self.size:
                    worker = PooledGdb(**self._worker_settings)  # type: ignore[arg-type]
                    self._all.append(worker)
                    break
                self._cond.wait()
        try:
            yield worker
        finally:
            with self._cond:
                if self._closed:
                    worker.close()
                else:
                    self._idle.append(worker)
                self._cond.notify()

    @property
    def gdb_path(self) -> str:
        return str(self._worker_settings["gdb_path"])

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self._all)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for worker in idle:
            worker.close()

    def __enter__(self) -> GdbPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def gdb_for_analysis(
    pool: GdbPool | None,
    *,
    gdb_path: str = "gdb",
    timeout: float = 300.0,
    debuginfod: bool = False,
    index_cache: str | None = None,
    own: OwnGdb | None = None,
) -> Iterator[OwnGdb | PooledGdb]:
    """A leased pool worker, or a gdb of the analysis's own when there is no pool (own: one
    the caller made already, maybe started early)."""
    if pool is not None:
        with pool.lease() as worker:
            yield worker
    elif own is not None:
        try:
            yield own
        finally:
            own.close()  # done with gdb: it is torn down while the rest of the analysis runs
    else:
        with OwnGdb(gdb_path=gdb_path, timeout=timeout, debuginfod=debuginfod, index_cache=index_cache) as own:
            yield own


def _rss_mb(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
