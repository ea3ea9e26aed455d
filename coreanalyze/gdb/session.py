"""One gdb process driven over GDB/MI: start it hardened, send commands, never hang.

gdb is spawned here with subprocess.Popen (not pygdbmi's GdbController) so that it can run
under an address-space limit and in its own process group: a timeout or a runaway shell
command started from gdb is then ended by killing the whole group. Output is read without
blocking (MiReader) and turned into pygdbmi's records (dicts) by coreanalyze.gdb.miparse.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import resource
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from pygdbmi import gdbmiparser

from coreanalyze.base import idle
from coreanalyze.base.errors import GdbError, GdbNotFound, GdbTimeout
from coreanalyze.gdb import miparse

# Result classes that end an MI command (GDB/MI "result-class").
_RESULT_CLASSES = frozenset({"done", "running", "connected", "error", "exit"})

# Records of one command kept in last_records: a hostile core can make gdb announce
# hundreds of thousands of threads while it is loaded.
_MAX_KEPT_RECORDS = 10_000
# Console or log text kept per command (`info proc mappings` of 65k mappings is ~7 MB).
_MAX_STREAM_CHARS = 32 * 1024 * 1024
# How long one read waits before the loop re-checks gdb's liveness and the deadlines.
_POLL_SLICE = 0.25
# How long close() lets gdb exit by itself before ending it.
_EXIT_GRACE = 0.05

# Environment variables that would make gdb's embedded Python load the wrong stdlib or
# site-packages (gdb links its own libpython).
_PYTHON_ENV_PREFIXES = ("PYTHON",)
_DROPPED_ENV = frozenset({"VIRTUAL_ENV", "CONDA_PREFIX", "DEBUGINFOD_URLS"})


class MiReader:
    """gdb's stdout and stderr read without blocking, split into lines, parsed into MI records.

    (pygdbmi's IoManager does the same but pretty-prints every record for its debug log,
    whether logging is on or not: a third of the time of a large answer.)
    """

    _CHUNK = 1 << 20

    def __init__(self, streams: dict[str, Any]) -> None:
        self._fds = {}
        for name, stream in streams.items():
            if stream is not None:
                fd = stream.fileno()
                os.set_blocking(fd, False)
                self._fds[fd] = name
        self._partial: dict[int, bytes] = {fd: b"" for fd in self._fds}

    def read(self, timeout: float) -> list[dict[str, Any]]:
        """The records that arrive within timeout (at least one read's worth when any is ready)."""
        if not self._fds:
            return []
        with idle.waiting():
            ready, _, _ = select.select(list(self._fds), [], [], max(0.0, timeout))
        records: list[dict[str, Any]] = []
        for fd in ready:
            try:
                data = os.read(fd, self._CHUNK)
            except BlockingIOError:
                continue
            if not data:
                del self._fds[fd]  # end of file: gdb is gone (the caller sees it exit)
                continue
            lines = (self._partial[fd] + data).split(b"\n")
            self._partial[fd] = lines.pop()
            for raw in lines:
                line = raw.decode(errors="replace").rstrip("\r")
                if not line or gdbmiparser.response_is_finished(line):
                    continue
                if line[:1] == "=":
                    # An async notification (=library-loaded, =thread-created, ...): nothing
                    # here reads them, and a core's ~300 library notes cost 4 ms to parse.
                    records.append({"type": "notify", "message": line[1:].split(",", 1)[0], "payload": None, "token": None, "stream": self._fds[fd]})
                    continue
                record = miparse.parse_response(line)
                record["stream"] = self._fds[fd]
                records.append(record)
        return records

    @property
    def closed(self) -> bool:
        """gdb closed both of its output streams (it exited or is exiting)."""
        return not self._fds


class _Answer:
    """The records of one command's answer: its console and log text (bounded), then its result."""

    def __init__(self, token: int, command: str) -> None:
        self.token = token
        self.command = command
        self._streams: dict[str, list[str]] = {"console": [], "log": []}
        self._sizes = {"console": 0, "log": 0}
        self._record: dict[str, Any] | None = None

    def take(self, rec: dict[str, Any]) -> bool:
        """Add a record; True when it is the command's result (the answer is complete)."""
        kind = rec.get("type")
        text = rec.get("payload")
        if kind in self._streams and isinstance(text, str):
            size = self._sizes[kind]
            if size < _MAX_STREAM_CHARS:
                self._streams[kind].append(text[: _MAX_STREAM_CHARS - size])
                self._sizes[kind] += len(self._streams[kind][-1])
        if kind == "result" and rec.get("token") == self.token and rec.get("message") in _RESULT_CLASSES:
            self._record = rec
            return True
        return False

    @property
    def console_text(self) -> str:
        return "".join(self._streams["console"])

    @property
    def log_text(self) -> str:
        return "".join(self._streams["log"])

    def result(self) -> dict[str, Any]:
        """The result's payload; GdbError with gdb's message for ^error."""
        assert self._record is not None
        payload = self._record.get("payload") or {}
        if self._record["message"] == "error":
            msg = payload.get("msg") if isinstance(payload, dict) else None
            raise GdbError(str(msg or f"gdb rejected {self.command[:120]!r}"))
        return payload if isinstance(payload, dict) else {}


def mi_quote(text: str) -> str:
    """An MI c-string: double quotes around text with backslash escapes.

    gdb's CLI argument splitter (used by `file`) understands the same quoting, so this is
    also right for commands that hand their raw argument to the CLI.
    """
    if "\n" in text or "\r" in text or "\0" in text:
        # A line break would end the MI command early; no legitimate path contains one.
        raise GdbError(f"refusing an argument with a line break or NUL: {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _gdb_env(debuginfod: bool) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_PYTHON_ENV_PREFIXES) and k not in _DROPPED_ENV
    }
    if debuginfod and "DEBUGINFOD_URLS" in os.environ:
        env["DEBUGINFOD_URLS"] = os.environ["DEBUGINFOD_URLS"]
    # English messages regardless of the user's locale: some are matched as text.
    env["LC_ALL"] = "C.UTF-8"
    env.pop("LANGUAGE", None)
    return env


def _index_cache_args(directory: str | None) -> list[str]:
    """gdb's cache of DWARF indexes (by build-id): a library's DWARF is indexed once, not at
    every start."""
    if not directory:
        return []
    return ["-iex", f"set index-cache directory {_plain(directory)}", "-iex", "set index-cache enabled on"]


def _hardening_args(debuginfod: bool) -> list[str]:
    settings = [
        # A core's libraries could name .gdbinit / -gdb.py files next to them: never run them.
        "set auto-load off",
        f"set debuginfod enabled {'on' if debuginfod else 'off'}",
        "set pagination off",
        "set confirm off",
        "set width 0",
        "set height 0",
        # Arguments cost reads of an untrusted stack and are not shown anyway.
        "set print frame-arguments none",
        # Demangling every symbol of a big C++ library (TensorFlow: ~470k) costs seconds;
        # only the frames we show are demangled, afterwards.
        "set demangle-style none",
    ]
    args: list[str] = []
    for s in settings:
        args += ["-iex", s]
    return args


class GdbSession:
    """A hardened gdb process speaking GDB/MI.

    Use as a context manager; every command has a timeout and the session has an overall
    deadline, after which gdb (with anything it spawned) is killed and GdbTimeout raised.
    """

    def __init__(
        self,
        gdb_path: str = "gdb",
        timeout: float = 60.0,
        command_timeout: float = 30.0,
        memory_limit_mb: int | None = 4096,
        debuginfod: bool = False,
        index_cache: str | None = None,
    ) -> None:
        self.gdb_path = gdb_path
        self.index_cache = index_cache
        self.timeout = timeout
        self.command_timeout = command_timeout
        self.memory_limit_mb = memory_limit_mb
        self.debuginfod = debuginfod
        self.last_console: str = ""  # console stream ("~") of the last command
        self._reads_chosen_libraries = False  # auto-solib-add is off (see load)
        self.last_log: str = ""  # log stream ("&") of the last command: warnings, errors
        self.last_records: list[dict[str, Any]] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._io: MiReader | None = None
        self._token = 0
        self._deadline = float("inf")
        self._pending: list[tuple[int, str, bool]] = []  # (token, command, ignore_error) of send_later
        self._unread: list[dict[str, Any]] = []  # records read past the last answer (commands in flight)
        self._alias_dir: str | None = None  # links under safe names for paths MI cannot carry

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> GdbSession:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        if self._proc is not None:
            return
        exe = shutil.which(self.gdb_path)
        if exe is None:
            raise GdbNotFound(f"gdb not found: {self.gdb_path} (install gdb or pass its path)")
        argv = [exe, "--interpreter=mi3", "-nx", "-nh", "-q", *_hardening_args(self.debuginfod)]
        if self.index_cache:
            try:
                os.makedirs(self.index_cache, mode=0o700, exist_ok=True)
                argv += _index_cache_args(self.index_cache)
            except OSError:
                pass  # no cache: gdb indexes DWARF afresh
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_gdb_env(self.debuginfod),
                start_new_session=True,
                close_fds=True,
            )
        except OSError as e:
            raise GdbNotFound(f"gdb not found: cannot run {exe}: {e.strerror or e}") from e
        self._limit_memory()
        for stream in (self._proc.stdout, self._proc.stderr):
            _widen_pipe(stream)
        self._io = MiReader({"stdout": self._proc.stdout, "stderr": self._proc.stderr})
        self._deadline = time.monotonic() + self.timeout
        # The first answer proves gdb runs MI and drains its start-up output.
        self.mi("-list-features")

    def _limit_memory(self) -> None:
        """A corrupt core must not let gdb eat the machine: its address space is capped before
        it is given anything to read. Set from here rather than in the child before exec: a
        child that runs no Python is started with vfork, tens of milliseconds sooner."""
        if not self.memory_limit_mb or self._proc is None:
            return
        size = self.memory_limit_mb * 1024 * 1024
        try:
            resource.prlimit(self._proc.pid, resource.RLIMIT_AS, (size, size))
        except (OSError, ValueError) as e:
            self._kill()
            raise GdbError(f"cannot limit gdb's memory: {e}") from None

    def restart_deadline(self, timeout: float | None = None) -> None:
        """Start the overall time limit afresh (a gdb kept for many cores has one per core)."""
        if timeout is not None:
            self.timeout = timeout
        self._deadline = time.monotonic() + self.timeout

    def close(self, *, at_once: bool = False) -> None:
        """Ask gdb to exit, then make sure nothing of it is left.

        at_once: end gdb without asking (it holds nothing: its index cache is written while it
        loads) and let a thread wait for the kernel to tear down its memory, which takes tens
        of milliseconds the caller can spend on other work. The program still waits for it
        before exiting.
        """
        if self._alias_dir is not None:
            shutil.rmtree(self._alias_dir, ignore_errors=True)
            self._alias_dir = None
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and not at_once:
            try:
                self._write("-gdb-exit")
                # gdb holds nothing worth saving; freeing a big heap on its way out can take
                # seconds, so it is not waited for long.
                proc.wait(timeout=_EXIT_GRACE)
            except (GdbError, OSError, subprocess.TimeoutExpired):
                pass
        self._kill(reap_in_background=at_once)

    def _kill(self, *, reap_in_background: bool = False) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            # The group holds gdb and anything it started (shell commands, debuginfod fetches).
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._proc = None
        self._io = None
        self._pending.clear()
        self._unread = []
        if reap_in_background:
            _reap_later(proc)
        else:
            _reap(proc)

    # ----------------------------------------------------------------- commands

    def _write(self, line: str) -> None:
        if self._proc is None or self._proc.stdin is None:
            raise GdbError("gdb is not running")
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise self._died(f"gdb died while sending {line!r}") from e

    def _died(self, what: str) -> GdbError:
        code = self._proc.poll() if self._proc is not None else None
        self._kill()
        detail = f" (exit status {code})" if code is not None else ""
        return GdbError(f"{what}{detail}")

    def mi(self, command: str, timeout: float | None = None, *, while_waiting: Callable[[], None] | None = None) -> dict[str, Any]:
        """Send one MI command and return the payload of its result record.

        ^error raises GdbError with gdb's message; no answer in time kills gdb and raises
        GdbTimeout; a gdb that died raises GdbError. The command's stream output is kept in
        last_console / last_log. while_waiting is called once the command is sent (work of the
        caller's own, done while gdb is busy with it). The answers of commands sent with
        send_later are collected first (finish_pending).
        """
        self.finish_pending()
        token = self._send(command)
        if while_waiting is not None:
            while_waiting()
        return self._answer(token, command, self.command_timeout if timeout is None else timeout)

    def send_later(self, command: str, *, ignore_error: bool = False) -> None:
        """Send a command whose answer is collected later: by finish_pending, which the next
        mi() calls first. gdb works on it meanwhile. ignore_error: its ^error is no failure."""
        token = self._send(command)
        self._pending.append((token, command, ignore_error))

    def finish_pending(self) -> None:
        """Wait for the answers of the commands sent with send_later, in order: GdbError for a
        ^error (unless ignored) or a gdb that died, GdbTimeout (gdb killed) for one that does
        not come within the command timeout, as for mi()."""
        failure: GdbError | None = None
        while self._pending:
            token, command, ignore_error = self._pending.pop(0)
            try:
                self._answer(token, command, self.command_timeout)
            except GdbError as e:
                if not self.alive:  # died or timed out (and killed): nothing more will come
                    raise
                if not ignore_error and failure is None:
                    failure = e  # raised once the answers after it are read too
        if failure is not None:
            raise failure

    @property
    def pending(self) -> int:
        """Commands sent with send_later whose answers are not collected yet."""
        return len(self._pending)

    def _send(self, command: str) -> int:
        if not self.alive:
            if self._proc is not None and self._io is not None:
                # Started and not closed: it ended on its own (killed, crashed) since the last command.
                raise self._died(f"gdb died before {command[:120]!r}")
            raise GdbError("gdb is not running")
        self._token += 1
        self._write(f"{self._token}{command}")
        return self._token

    def _answer(self, token: int, command: str, limit: float) -> dict[str, Any]:
        """Read until the result record of command (sent with token); see mi()."""
        assert self._io is not None
        self.last_console = ""
        self.last_log = ""
        self.last_records = []
        answer = _Answer(token, command)
        command_deadline = min(time.monotonic() + limit, self._deadline)
        while True:
            if self._unread:  # what the read that brought the previous answer brought after it
                records, self._unread = self._unread, []
            else:
                records = self._read_until(command, command_deadline, limit)
            for i, rec in enumerate(records):
                if len(self.last_records) < _MAX_KEPT_RECORDS:
                    self.last_records.append(rec)
                if answer.take(rec):
                    self._unread = records[i + 1 :]  # the answers of commands sent after it
                    self.last_console, self.last_log = answer.console_text, answer.log_text
                    return answer.result()

    def _read_until(self, command: str, command_deadline: float, limit: float) -> list[dict[str, Any]]:
        """The next records from gdb; GdbTimeout past the deadline, GdbError when gdb died."""
        assert self._io is not None
        remaining = command_deadline - time.monotonic()
        if remaining <= 0:
            self._kill()
            overall = command_deadline >= self._deadline
            why = f"the session's {self.timeout:g}s limit" if overall else f"{limit:g}s"
            raise GdbTimeout(f"gdb did not answer {command[:120]!r} within {why}")
        if self._proc is None or self._proc.poll() is not None:
            raise self._died(f"gdb died during {command[:120]!r}")
        try:
            records = self._io.read(min(_POLL_SLICE, remaining))
        except (OSError, ValueError) as e:
            raise self._died(f"lost gdb during {command[:120]!r}: {e}") from e
        if self._io.closed and not records:
            try:
                self._proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
            raise self._died(f"gdb died during {command[:120]!r}")
        return records

    def console(self, command: str, timeout: float | None = None) -> str:
        """Run a CLI command; return what it printed on the console stream."""
        self.mi(f"-interpreter-exec console {mi_quote(command)}", timeout=timeout)
        return self.last_console

    # ----------------------------------------------------------------- loading

    def load(
        self,
        core: str | os.PathLike[str],
        executable: str | os.PathLike[str] | None = None,
        sysroot: str | os.PathLike[str] | None = None,
        solib_search_path: str | os.PathLike[str] | None = None,
        debug_dirs: Iterable[str | os.PathLike[str]] = (),
        before_target: Callable[[], None] | None = None,
        libraries: Any = None,  # a coreanalyze.gdb.libraries.LibraryChoice
        program_debug_file: bool = True,
    ) -> None:
        """Open a core (and its executable) the way the analysis needs it.

        Settings that change where libraries and debug info are found come before the program
        and `target core`, which is when gdb reads the program and loads the shared libraries. before_target is called
        as soon as that command is sent (the caller may start work of its own while gdb is busy).
        libraries: read only the libraries it chooses (coreanalyze.gdb.libraries); else all.
        program_debug_file: False: gdb reads the program without its separate debug file.
        """
        if sysroot is not None:
            # `set sysroot` takes the rest of the line as the path, no quote processing.
            self.mi(f"-gdb-set sysroot {_plain(_abs(sysroot))}")
        if solib_search_path is not None:
            self.mi(f"-gdb-set solib-search-path {_plain(str(solib_search_path))}")
        dirs = [_abs(d) for d in debug_dirs]
        if executable is not None and not program_debug_file:
            # No debug directory while gdb reads the program: it finds no separate debug file
            # for it (coreanalyze.gdb.programframes); the libraries, read later, find theirs.
            self.mi(f"-gdb-set debug-file-directory {os.devnull}")
            self.mi(f"-file-exec-and-symbols {mi_quote(self._speakable(executable))}")
        if dirs:
            self.mi(f"-gdb-set debug-file-directory {_plain(os.pathsep.join(dirs))}")
        if executable is not None and program_debug_file:
            # After the debug directories: gdb looks for the program's separate debug file as it
            # reads the program (a sysroot's /usr/lib/debug, say, is found only when it is set).
            self.mi(f"-file-exec-and-symbols {mi_quote(self._speakable(executable))}")
        if libraries is not None or self._reads_chosen_libraries:
            # A pooled gdb keeps the setting from one core to the next: always say it then.
            self.mi(f"-gdb-set auto-solib-add {'off' if libraries is not None else 'on'}")
            self._reads_chosen_libraries = libraries is not None
        command = f"-target-select core {_plain(self._speakable(core))}"
        # The caller's work starts once gdb has the command: started before, its threads would
        # hold the interpreter while the command waits to be sent.
        self.mi(command, while_waiting=before_target)
        if libraries is not None:
            libraries.load(self)
        elif executable is None:
            # Without the program gdb still lists the libraries from the loader's list in the
            # core, but reads none of them (gdb 13): no symbols and no unwind tables, so every
            # stack ends after one frame. Ask for them.
            self.console("sharedlibrary")

    def _speakable(self, path: str | os.PathLike[str]) -> str:
        """An absolute path gdb can be given over MI.

        A file name may contain a line break (a core_pattern with %e takes the process's name,
        which may hold any byte but '/'), where an MI command ends, or end in white space,
        which gdb strips. Such a file is reached through a link with a plain name in a private
        directory instead.
        """
        absolute = _abs(path)
        if "\n" not in absolute and "\r" not in absolute and absolute == absolute.rstrip():
            return absolute
        if self._alias_dir is None:
            self._alias_dir = tempfile.mkdtemp(prefix="coreanalyze-gdb-")
        alias = os.path.join(self._alias_dir, f"file{len(os.listdir(self._alias_dir))}")
        os.symlink(absolute, alias)
        return alias

    def source(self, script_path: str | os.PathLike[str]) -> str:
        """Load a gdb script (.py runs in gdb's Python); returns its console output."""
        return self.console(f"source {_plain(_abs(script_path))}")


_reapers: list[threading.Thread] = []
_reapers_lock = threading.Lock()
_reapers_waited_at_exit = False


# gdb's output pipes hold this much (Linux's default is 64 KiB; unprivileged processes may ask for
# up to /proc/sys/fs/pipe-max-size, 1 MiB by default).
PIPE_BYTES = 1 << 20


def _widen_pipe(stream) -> None:
    """Let gdb write ahead while this process is busy: `target core` of a TensorFlow core prints
    ~130 KiB of library notifications, and with a 64 KiB pipe gdb stops at the first 64 KiB
    until someone reads, which a caller doing its own work beside gdb (Python stacks, a batch's
    previous core) does not do. Where the pipe cannot grow, it stays as it is."""
    if stream is None or not hasattr(fcntl, "F_SETPIPE_SZ"):
        return
    try:
        fcntl.fcntl(stream.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass


def _reap_later(proc: subprocess.Popen[bytes]) -> None:
    global _reapers_waited_at_exit
    thread = threading.Thread(target=_reap, args=(proc,), name="gdb-reap", daemon=True)
    with _reapers_lock:
        if not _reapers_waited_at_exit:
            atexit.register(_wait_for_reapers)
            _reapers_waited_at_exit = True
        _reapers[:] = [t for t in _reapers if t.is_alive()]
        _reapers.append(thread)
    thread.start()


def _wait_for_reapers() -> None:
    """At exit: every gdb ended is gone (and counted in this process's resource usage)."""
    with _reapers_lock:
        pending = list(_reapers)
    for thread in pending:
        thread.join(timeout=10)


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for a killed gdb to be gone and close our ends of its pipes."""
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


def _abs(path: str | os.PathLike[str]) -> str:
    # Absolute paths: no tilde expansion surprises, no leading '-' read as an option.
    return str(Path(path).expanduser().absolute())


def _plain(text: str) -> str:
    """A rest-of-line argument (taken verbatim by gdb): only line breaks are unsafe."""
    if "\n" in text or "\r" in text or "\0" in text:
        raise GdbError(f"refusing an argument with a line break or NUL: {text!r}")
    return text
