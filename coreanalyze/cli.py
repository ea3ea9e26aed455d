"""The command line: a thin layer that turns options into calls and errors into exit codes.

    coreanalyze CORE [--python PATH] [-o PATH|-] [--format html|json|text|markdown] ...
    coreanalyze --pid PID [--keep-core PATH] ...
    coreanalyze triage FILE|-

`coreanalyze CORE` is the main form; subcommands are recognised by name, anything else is
taken as a core path (`coreanalyze analyze CORE` is the explicit spelling).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
from dataclasses import replace
from pathlib import Path

import click

from coreanalyze import __version__
from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.errors import EXIT_ANALYSIS_FAILED, EXIT_BAD_INPUT, BadInput, CoreAnalyzeError

FORMATS = ("html", "json", "text", "markdown")
EXTENSIONS = {"html": ".html", "json": ".json", "text": ".txt", "markdown": ".md"}


class DefaultToAnalyze(click.Group):
    """A group whose first argument, when it is not a subcommand, is a core to analyze."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["analyze", *args]
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version", "--schema"):
            args = ["analyze", *args]
        return super().parse_args(ctx, args)


def _fail(message: str, code: int) -> None:
    click.echo(f"coreanalyze: {message}", err=True)
    sys.exit(code)


def _format_for(output: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    if output and output != "-":
        suffix = Path(output).suffix.lower()
        for name, ext in EXTENSIONS.items():
            if suffix == ext or (name == "markdown" and suffix == ".markdown"):
                return name
    return "html"


def _write_report(text: str, output: str) -> None:
    if output == "-":
        from coreanalyze.render import page

        page(text)
        return
    path = Path(output)
    try:
        if path.exists() and not path.is_file():
            # A device, FIFO or /dev/stdout: write into it. Replacing it would put a regular
            # file where /dev/null was.
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return
        write_atomically(path, text)
    except OSError as e:
        raise BadInput(f"cannot write the report to {output}: {e.strerror or e}") from None


def _print_schema(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from coreanalyze.schema import schema_text

    click.echo(schema_text(), nl=False)
    ctx.exit()


@click.group(cls=DefaultToAnalyze, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="coreanalyze")
@click.option("--schema", is_flag=True, expose_value=False, is_eager=True, callback=_print_schema, help="Print the JSON Schema of the JSON report and exit.")
def cli() -> None:
    """Explain why a Python process died in native code (TensorFlow, TFLite, extensions).

    \b
    coreanalyze core.1234 --python /usr/bin/python3
    coreanalyze --pid 4242            (a live, stuck process: snapshot, analyze, leave it running)
    coreanalyze triage backtrace.txt
    """


@cli.command("analyze")
@click.argument("core", required=False, type=click.Path(dir_okay=True, path_type=str))
@click.option("--pid", type=int, metavar="PID", help="Analyze a live process: snapshot it (gdb attaches and detaches), leave it running.")
@click.option("--keep-core", metavar="PATH", help="With --pid: keep the snapshot's core at PATH (default: deleted).")
@click.option("--python", "--exe", "python", metavar="PATH", help="The program that dumped the core (default: taken from the core).")
@click.option("-o", "--output", metavar="PATH|-", help="Where to write the report; '-' for stdout (default: <core name>.html here).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Report format (default: from -o's extension, else html).")
@click.option("--gdb", "gdb_path", default="gdb", show_default=True, metavar="PATH", help="The gdb to use.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS", help="Limit for the whole gdb analysis.")
@click.option("--sysroot", metavar="DIR|IMAGE", help="The crashed machine's files in the same layout: a directory, a docker/podman save tarball or an OCI image layout.")
@click.option("--debug-dir", "debug_dirs", multiple=True, metavar="DIR", help="Where to look for separate debug files (repeatable).")
@click.option("--debuginfod", is_flag=True, help="Let gdb download debug info by build-id (off by default).")
@click.option("--rules", "rules_files", multiple=True, metavar="FILE", help="Extra classification rules (TOML; repeatable).")
@click.option("--locals", "with_locals", is_flag=True, help="Show locals of the innermost Python frames of the crashing thread.")
@click.option("--include-env", is_flag=True, help="Include environment variable values read from the core.")
@click.option("--fetch", is_flag=True, help="Download the wheels of missing site-packages libraries with pip (off by default).")
@click.option("--gpu-core", metavar="PATH", help="The GPU core dump (.nvcudmp) the CUDA driver wrote (default: looked for beside the core).")
@click.option("--shrink", "shrink_to", metavar="PATH", help="Also write the core shrunk to what this report needs (see `coreanalyze shrink`; zstd when PATH ends in .zst).")
@click.option("--known", "known_files", multiple=True, metavar="FILE", help="Your own known crashes (TOML, like coreanalyze/known/crashes.toml; repeatable); the shipped ones are always matched.")
def analyze_command(core, pid, keep_core, python, output, fmt, gdb_path, timeout, sysroot, debug_dirs, debuginfod, rules_files, with_locals, include_env, fetch, gpu_core, shrink_to, known_files):
    """Analyze one core file (or a live process with --pid) and write a report."""
    from coreanalyze.base import later
    from coreanalyze.base.cachedir import cache_dir

    # What the analysis finds for the next ones (cache entries) is made once the report is out,
    # by a detached process: the command returns as soon as its own work is done.
    with later.deferring():
        try:
            code = _analyze_and_report(core, pid, keep_core, python, output, fmt, gdb_path, timeout, sysroot, debug_dirs, debuginfod, rules_files, with_locals, include_env, fetch, gpu_core, shrink_to, known_files)
        finally:
            later.detach(str(cache_dir()))
    sys.exit(code)


def _analyze_and_report(core, pid, keep_core, python, output, fmt, gdb_path, timeout, sysroot, debug_dirs, debuginfod, rules_files, with_locals, include_env, fetch, gpu_core, shrink_to, known_files) -> int:
    from coreanalyze.base.safenames import report_filename
    from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_live_process

    options = AnalyzeOptions(
        python=python,
        gdb=gdb_path,
        timeout=timeout,
        sysroot=sysroot,
        debug_dirs=list(debug_dirs),
        debuginfod=debuginfod,
        rules_files=[Path(p) for p in rules_files],
        with_locals=with_locals,
        include_env=include_env,
        fetch=fetch,
        gpu_core=gpu_core,
    )
    if (core is None) == (pid is None):
        raise BadInput("give a core file or --pid PID (one of them)")
    if keep_core is not None and pid is None:
        raise BadInput("--keep-core goes with --pid")
    known = _known_crashes(known_files)
    if pid is not None:
        _free_from_watcher(pid)
        result = analyze_live_process(pid, options, keep_core=keep_core)
        core = keep_core or f"pid-{pid}"
    else:
        result = _analyze_file(core, options)
    _recognize_known(result.report, known)
    # Imported after the analysis, which imports it beside the debugger (coreanalyze.pipeline.warmup).
    from coreanalyze.render import color_wanted, render, verdict

    fmt = _format_for(output, fmt)
    text = render(result.report, fmt, color=fmt == "text" and output == "-" and color_wanted(sys.stdout))
    if output == "-":
        _write_report(text, "-")
    else:
        target = output or report_filename(Path(core).name, EXTENSIONS[fmt])
        _write_report(text, target)
        click.echo(verdict(result.report, color=color_wanted(sys.stdout), report_path=target), nl=False)
    for line in result.report.warnings:
        if line != result.failure:
            click.echo(f"coreanalyze: warning: {line}", err=True)
    if shrink_to and core and pid is None:
        _shrink_and_say(core, shrink_to, options, to_stderr=True, compress=shrink_to.endswith(".zst"))
    if result.failure:
        click.echo(f"coreanalyze: error: {result.failure}", err=True)
    return result.exit_code


def _free_from_watcher(pid: int) -> None:
    """A process that `coreanalyze run` or the crash guard watches is held by its watcher's
    ptrace: the watcher steps aside for the snapshot (the process runs on, unwatched)."""
    from coreanalyze.capture.stepaside import free_from_watcher

    watcher = free_from_watcher(pid)
    if watcher is not None:
        click.echo(f"coreanalyze: process {pid} was watched by coreanalyze (pid {watcher}); the watch stepped aside for this snapshot", err=True)


def _analyze_file(core: str, options):
    """A core as given, or decompressed into a temporary file first (zstd, LZ4, xz, gzip, as
    systemd-coredump and people store them, or an apport .crash file's CoreDump); the report
    names the file given."""
    from coreanalyze.corefile.compressed import compression_of, decompressed
    from coreanalyze.pipeline.analyze import analyze_core

    compression = compression_of(core) if os.path.isfile(core) else None
    if compression is not None:
        options = replace(options, gpu_core_beside=core)  # its GPU core is beside it, not the copy
    crash = None
    if compression == "crash":  # an apport report: its fields first (no core in it: one line)
        from coreanalyze.corefile.apportcrash import read_crash_fields

        crash = read_crash_fields(core)
        options = replace(options, python=options.python or crash.program)
    with decompressed(core, compression) as plain:
        try:
            result = analyze_core(plain, options)
        except BadInput as e:
            if plain == core:
                raise
            raise BadInput(str(e).replace(plain, core)) from None  # the file given, not its unpacked copy
    if compression is not None:
        from coreanalyze.gpu.stage import name_as_given

        name_as_given(result.report, plain, core)
    if crash is not None:
        crash.fill(result.report)
    return result


def _known_crashes(known_files):
    """The shipped and the user's known crashes, read before any work: a --known file that
    cannot be used is one line, exit 2 (coreanalyze.known.load_known)."""
    from coreanalyze.known import load_known

    return load_known(known_files)


def _recognize_known(report, known) -> None:
    """classification.known (and its advice first) from the known crashes."""
    from coreanalyze.known.onreport import recognize

    recognize(report, known)


@cli.command("run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD [ARGS...]")
@click.option("--out", "out_dir", default="coreanalyze-reports", show_default=True, metavar="DIR", help="Where a crash's core and reports go (made only when something crashes).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS", help="Limit for one crash's analysis (the crashed process waits for it).")
@click.option("--keep-core/--no-keep-core", default=True, show_default=True, help="Keep the core written for the report in DIR.")
def run_command(command, out_dir, timeout, keep_core):
    """Run CMD and report any crash of it or of any process it starts, core or no core.

    \b
    coreanalyze run -- python train.py --epochs 3
    coreanalyze run --out /tmp/reports -- torchrun --nproc-per-node 2 train.py

    A process that receives a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP,
    SIGSYS) is held there, its core written and analyzed into DIR, and then it dies of its
    signal as it would have. Exits with CMD's status (128 + signal when it died of one).
    See docs/capture.md.
    """
    from coreanalyze.capture.run import RunOptions, run

    sys.exit(run(list(command), RunOptions(out_dir=Path(out_dir), timeout=timeout, keep_core=keep_core)))


@cli.command("guard")
@click.option("--install", "action", flag_value="install", help="Put the startup hook into this environment's site-packages (wheels have it already).")
@click.option("--uninstall", "action", flag_value="uninstall", help="Take the startup hook away.")
def guard_command(action):
    """The crash guard's startup hook: with it, COREANALYZE_GUARD=DIR arms every Python process.

    \b
    COREANALYZE_GUARD=/tmp/reports python train.py     (its crash, and its children's, reported there)
    python -c "import coreanalyze.capture.guard as g; g.arm('/tmp/reports')"   (arm from inside)

    See docs/capture.md.
    """
    from coreanalyze.capture import hook

    try:
        if action == "install":
            click.echo(f"installed: {hook.install()}")
        elif action == "uninstall":
            removed = hook.uninstall()
            click.echo(f"removed: {removed}" if removed else f"not installed: {hook.hook_path()}")
        else:
            state = "installed" if hook.installed() else "not installed (coreanalyze guard --install)"
            click.echo(f"startup hook {hook.hook_path()}: {state}")
    except OSError as e:
        raise BadInput(f"cannot write {hook.hook_path()}: {e.strerror or e}") from None


@cli.command("triage")
@click.argument("source", metavar="FILE|-")
@click.option("-o", "--output", default="-", metavar="PATH|-", show_default=True, help="Where to write the report.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Report format (default: text on stdout, else from -o's extension).")
@click.option("--rules", "rules_files", multiple=True, metavar="FILE", help="Extra classification rules (TOML; repeatable).")
@click.option("--known", "known_files", multiple=True, metavar="FILE", help="Your own known crashes (TOML; repeatable).")
def triage_command(source, output, fmt, rules_files, known_files):
    """Classify a backtrace, fatal log or sanitizer report pasted into a ticket."""
    from coreanalyze.classify import load_rules
    from coreanalyze.render import color_wanted, render
    from coreanalyze.triage import triage_text

    if source == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        path = Path(source)
        if not path.is_file():
            raise BadInput(f"{source}: no such file")
        text, name = path.read_text(encoding="utf-8", errors="replace"), path.name
    rules = load_rules([Path(p) for p in rules_files])
    known = _known_crashes(known_files)
    report = triage_text(text, name, rules=rules)
    _recognize_known(report, known)
    fmt = fmt or ("text" if output == "-" else _format_for(output, None))
    _write_report(render(report, fmt, color=fmt == "text" and output == "-" and color_wanted(sys.stdout)), output)


@cli.command("last")
@click.option("--exe", "exe_name", metavar="NAME", help="Only cores of this executable (its name, as `ps` shows it, or its path).")
@click.option("--pid", type=int, metavar="PID", help="Only the core of this process id.")
@click.option("--list", "list_only", is_flag=True, help="List the cores found, newest first, and analyze none.")
@click.option("--python", "python", metavar="PATH", help="The program that dumped the core (default: taken from the core).")
@click.pass_context
def last_command(ctx, exe_name, pid, list_only, python, **analyze_options):
    """Analyze the newest core where this system puts cores: core_pattern's place, systemd-coredump,
    apport's /var/crash, this directory's core and core.PID (docs/locating-cores.md). With none,
    say why and what to change. A core file named `last` here is `coreanalyze ./last`."""
    import time

    from coreanalyze.locate.finder import core_file, find_cores

    search = find_cores(pid=pid, exe=exe_name)
    if not search.found:
        raise BadInput(search.why or "no core found")
    if list_only:
        for c in search.found:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.mtime))
            click.echo(f"{when}  {c.source:<18} {c.pid if c.pid is not None else '-':>8}  {c.exe or '-'}  {c.path}")
        return
    newest = search.found[0]
    click.echo(f"coreanalyze: the newest core: {newest.path} ({newest.source})", err=True)
    with core_file(newest) as path:
        ctx.invoke(analyze_command, core=path, pid=None, keep_core=None, python=python, **analyze_options)


# `last` takes every option of `coreanalyze CORE` but --pid/--keep-core/--python, which it has
# its own way (--exe there names the executable to pick, not the program to read).
last_command.params.extend(p for p in analyze_command.params if p.name not in ("core", "pid", "keep_core", "python"))


@cli.command("batch")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--out", required=True, metavar="DIR", help="Output directory: reports/, results/, summary.json, index.html, cores.jsonl.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), metavar="N", help="Cores analyzed in parallel (default: one per CPU).")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS", help="Limit for one core's analysis.")
@click.option("--resume", is_flag=True, help="Continue a batch in --out: skip cores (by content) that already have a result.")
@click.option("--shard", metavar="I/N", help="Analyze only shard I of N (split by core content; combine with `coreanalyze merge`).")
@click.option("--python", "--exe", "python", metavar="PATH", help="The program that dumped every core (default: each core's own).")
@click.option("--sysroot", metavar="DIR|IMAGE", help="The crashed machines' files in the same layout: a directory, a docker/podman save tarball or an OCI image layout.")
@click.option("--gdb", "gdb_path", default="gdb", show_default=True, metavar="PATH", help="The gdb to use.")
@click.option("--debug-dir", "debug_dirs", multiple=True, metavar="DIR", help="Where to look for separate debug files (repeatable).")
@click.option("--rules", "rules_files", multiple=True, metavar="FILE", help="Extra classification rules (TOML; repeatable).")
@click.option(
    "--cluster",
    metavar="ADDRESS",
    help="Analyze on a Dask cluster: a scheduler's tcp://HOST:PORT (cores and --python/--sysroot/--rules "
    "at the same paths on every worker), or local:N for N worker processes here. Needs coreanalyze[cluster].",
)
@click.option("--fetch", is_flag=True, help="Download the wheels of missing site-packages libraries with pip; one download per wheel, shared by the workers.")
@click.option("--since", "since", metavar="PREVIOUS_OUT", help="A previous batch's --out: mark groups new, growing, back, and list those gone.")
@click.option("--known", "known_files", multiple=True, metavar="FILE", help="Your own known crashes (TOML, like the shipped coreanalyze/known/crashes.toml; repeatable).")
@click.option("--shrink", is_flag=True, help="Also shrink each crash group's example core to attach to a ticket (OUT/shrunk/, zstd; see `coreanalyze shrink`); done here, after the analyses.")
def batch_command(paths, out, jobs, timeout, resume, shard, python, sysroot, gdb_path, debug_dirs, rules_files, cluster, fetch, since, known_files, shrink):
    """Analyze many cores (directories, globs, files; systemd-coredump's too) and group them by crash."""
    from coreanalyze.batch import BatchOptions, parse_shard, run_batch
    from coreanalyze.batch.outcome import batch_outcome_lines
    from coreanalyze.pipeline.analyze import AnalyzeOptions

    if sysroot:
        from coreanalyze.image import is_image, prepare_image

        if is_image(sysroot):
            prepare_image(sysroot)  # indexed once, before the workers share it; bad ones stop here
    options = BatchOptions(
        out=Path(out),
        analyze=AnalyzeOptions(
            python=python,
            gdb=gdb_path,
            sysroot=sysroot,
            debug_dirs=list(debug_dirs),
            rules_files=[Path(p) for p in rules_files],
            fetch=fetch,
        ),
        jobs=jobs,
        timeout=timeout,
        resume=resume,
        shard=parse_shard(shard) if shard else None,
        progress=sys.stderr.isatty(),
        cluster=cluster,
        known_files=[Path(p) for p in known_files],
        since=Path(since) if since else None,
        shrink=shrink,
    )
    result = run_batch(list(paths), options)
    for line in result.warnings:
        click.echo(f"coreanalyze: warning: {line}", err=True)
    for line in batch_outcome_lines(result):
        click.echo(line)
    if result.interrupted:
        _fail(f"interrupted; what is done is kept: rerun with --resume --out {out} to continue", 130)


@cli.command("watch")
@click.argument("directories", nargs=-1, required=True, metavar="DIR...")
@click.option("--out", required=True, metavar="DIR", help="Output directory, in batch's layout (its index, `merge` and `--since` read it); a restart continues it.")
@click.option("--full", "keep_full", type=click.IntRange(min=0), default=1, show_default=True, metavar="N", help="Full cores kept per crash signature (the first N to arrive), in OUT/kept/.")
@click.option("--others", type=click.Choice(("shrunk", "none")), default="shrunk", show_default=True, help="What is kept of every other analyzed core: shrunk (OUT/shrunk/) or nothing.")
@click.option("--budget", metavar="SIZE", help="Most bytes OUT may hold (e.g. 50G): a core that would exceed it is kept smaller (full -> shrunk -> none).")
@click.option("--delete-analyzed", is_flag=True, help="Remove each original once its reports and what is kept of it are written and synced.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS", help="Limit for one core's analysis.")
@click.option("--memory-limit", metavar="SIZE", help="Address-space limit of the analyses (e.g. 8G); gdb has its own besides.")
@click.option("--nice", type=click.IntRange(min=0, max=19), default=10, show_default=True, metavar="N", help="CPU niceness of the analyses.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=2.0, show_default=True, metavar="SECONDS", help="Time between looks at the watched directories.")
@click.option("--settle", type=click.FloatRange(min=0), default=30.0, show_default=True, metavar="SECONDS", help="A file that is not a whole ELF core is taken once unchanged this long.")
@click.option("--min-free", default="64M", show_default=True, metavar="SIZE", help="Wait while OUT's file system has less free space.")
@click.option("--journal", metavar="FILE", help="systemd-coredump's journal entries as a file (journalctl -o export or -o json); default: ask journalctl, where there is one.")
@click.option("--once", is_flag=True, help="Analyze the complete cores there now, then stop (for a timer instead of a service).")
@click.option("--python", "--exe", "python", metavar="PATH", help="The program that dumped every core (default: each core's own).")
@click.option("--sysroot", metavar="DIR|IMAGE", help="The crashed processes' files in the same layout.")
@click.option("--gdb", "gdb_path", default="gdb", show_default=True, metavar="PATH", help="The gdb to use.")
@click.option("--debug-dir", "debug_dirs", multiple=True, metavar="DIR", help="Where to look for separate debug files (repeatable).")
@click.option("--rules", "rules_files", multiple=True, metavar="FILE", help="Extra classification rules (TOML; repeatable).")
@click.option("--known", "known_files", multiple=True, metavar="FILE", help="Your own known crashes (TOML; repeatable).")
@click.option("--fetch", is_flag=True, help="Download the wheels of missing site-packages libraries with pip.")
def watch_command(directories, out, keep_full, others, budget, delete_analyzed, timeout, memory_limit, nice, poll, settle, min_free, journal, once,
                  python, sysroot, gdb_path, debug_dirs, rules_files, known_files, fetch):  # fmt: skip
    """Analyze each core as it arrives in DIR... (systemd-coredump's directory, a core_pattern
    directory), keep what matters of it, and keep OUT's index current. See docs/watch.md."""
    from coreanalyze.batch import BatchOptions
    from coreanalyze.pipeline.analyze import AnalyzeOptions
    from coreanalyze.watch.keep import KeepPolicy
    from coreanalyze.watch.limits import parse_size
    from coreanalyze.watch.watcher import WatchOptions, run_watch

    options = WatchOptions(
        directories=list(directories),
        batch=BatchOptions(
            out=Path(out),
            analyze=AnalyzeOptions(python=python, gdb=gdb_path, sysroot=sysroot, debug_dirs=list(debug_dirs),
                                   rules_files=[Path(p) for p in rules_files], fetch=fetch),  # fmt: skip
            jobs=1,  # one core at a time: a server's cores must not take the server
            timeout=timeout,
            known_files=[Path(p) for p in known_files],
        ),
        keep=KeepPolicy(full=keep_full, others=others, budget=parse_size(budget, "--budget") if budget else None, delete_analyzed=delete_analyzed),
        poll=poll,
        settle=settle,
        nice=nice,
        memory_limit=parse_size(memory_limit, "--memory-limit") if memory_limit else None,
        journal=journal,
        once=once,
        min_free=parse_size(min_free, "--min-free"),
    )
    result = run_watch(options, lambda line: click.echo(line))
    for line in result.warnings:
        click.echo(f"coreanalyze: warning: {line}", err=True)
    stopped = "stopped" if result.interrupted else "done"
    removed = f", {result.removed} originals removed" if result.removed else ""
    click.echo(f"{stopped}: {result.analyzed} cores recorded in this run{removed}; index: {Path(out) / 'index.html'}")


@cli.command("shrink")
@click.argument("core", type=click.Path(dir_okay=False, path_type=str))
@click.option("-o", "--output", required=True, metavar="PATH", help="Where to write the shrunk core.")
@click.option("--compress", is_flag=True, help="Write it zstd-compressed (coreanalyze reads it as it is).")
@click.option("--python", "--exe", "python", metavar="PATH", help="The program that dumped the core (default: taken from the core).")
@click.option("--sysroot", metavar="DIR|IMAGE", help="The crashed machine's files in the same layout.")
@click.option("--gdb", "gdb_path", default="gdb", show_default=True, metavar="PATH", help="The gdb to use.")
@click.option("--timeout", type=click.FloatRange(min=1), default=300, show_default=True, metavar="SECONDS", help="Limit for the analysis.")
@click.option("--stack-bytes", type=click.IntRange(min=4096), default=1 << 20, show_default=True, metavar="N", help="Bytes of stack kept per thread (the crashing thread's stack is kept whole).")
@click.option("--redact", is_flag=True, help="Also drop environment values, arguments after the program name and all memory not needed for the stacks.")
@click.option("--gpu-core", metavar="PATH", help="The GPU core dump the analysis reads beside it (not copied: attach it as it is).")
def shrink_command(core, output, compress, python, sysroot, gdb_path, timeout, stack_bytes, redact, gpu_core):
    """Write a core small enough to attach: only what the report and gdb's backtraces need."""
    from coreanalyze.pipeline.analyze import AnalyzeOptions

    if not os.path.isfile(core):
        raise BadInput(f"{core}: no such core file")
    options = AnalyzeOptions(python=python, gdb=gdb_path, timeout=timeout, sysroot=sysroot, gpu_core=gpu_core)
    _shrink_and_say(core, output, options, compress=compress, stack_bytes=stack_bytes, redact=redact)


def _shrink_and_say(core: str, output: str, options, to_stderr: bool = False, **how) -> None:
    """Shrink `core` to `output` and say what was kept (on stderr when stdout is a report)."""
    from coreanalyze.shrink import shrink_core

    result = shrink_core(core, output, options, **how)
    compressed = f", {_mib(result.written)} compressed" if how.get("compress") else ""
    click.echo(f"{output}: {_mib(result.size)}{compressed} (the core was {_mib(result.original_size)})", err=to_stderr)
    for why, size in sorted(result.kept.items(), key=lambda item: -item[1]):
        click.echo(f"  {_mib(size):>10}  {why}", err=to_stderr)
    for what in result.redacted:
        click.echo(f"  dropped: {what}", err=to_stderr)
    if result.gdb_missing:
        click.echo(f"coreanalyze: warning: gdb still misses {len(result.gdb_missing)} address(es) in the shrunk core", err=True)
    if result.failure:
        click.echo(f"coreanalyze: warning: the analysis was partial ({result.failure}); the shrunk core holds what it read", err=True)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


@cli.command("merge")
@click.argument("dirs", nargs=-1, required=True, metavar="DIR...")
@click.option("--out", required=True, metavar="DIR", help="Where the combined batch goes (may be one of DIR...).")
@click.option("--known", "known_files", multiple=True, metavar="FILE", help="Your own known crashes (TOML; repeatable).")
def merge_command(dirs, out, known_files):
    """Combine batch output directories (shards, machines) into one, counting each core once."""
    from coreanalyze.batch import merge_batches
    from coreanalyze.batch.outcome import merge_outcome_lines

    result = merge_batches(list(dirs), out, known_files)
    for line in result.warnings:
        click.echo(f"coreanalyze: warning: {line}", err=True)
    for line in merge_outcome_lines(result):
        click.echo(line)


@cli.group("cache")
def cache_group():
    """See or clear what analyses keep for the next ones (library symbols, indexes, file facts)."""


@cache_group.command("info")
def cache_info_command():
    """Where the cache is, its size per part, and its cap."""
    from coreanalyze.base import cachesize

    for line in cachesize.info_lines():
        click.echo(line)


@cache_group.command("clear")
def cache_clear_command():
    """Remove everything in the cache (the next analysis is a cold one)."""
    from coreanalyze.base import cachesize
    from coreanalyze.base.cachedir import cache_dir

    click.echo(f"removed {_mib(cachesize.clear())} from {cache_dir()}")


def main(argv: list[str] | None = None) -> None:
    # At exit the interpreter's last garbage collection walks every object the analysis made
    # (rules, patterns, the report): ~35 ms of a warm run for nothing, as the process ends.
    # Frozen objects are skipped; files are closed by then (every one is written in a `with`).
    atexit.register(gc.freeze)
    try:
        cli.main(args=argv, prog_name="coreanalyze", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("interrupted", 130)
    except click.exceptions.ClickException as e:
        _fail(e.format_message(), EXIT_BAD_INPUT)
    except CoreAnalyzeError as e:
        _fail(f"error: {e}", e.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as e:  # noqa: BLE001 — never a traceback for the user; debug env var shows it
        if os.environ.get("COREANALYZE_DEBUG"):
            raise
        _fail(f"internal error: {type(e).__name__}: {e} (set COREANALYZE_DEBUG=1 for details)", EXIT_ANALYSIS_FAILED)
    sys.exit(0)


if __name__ == "__main__":
    main()
