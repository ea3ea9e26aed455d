#!/usr/bin/env bash
# Sets up coreanalyze and everything its test suite needs, on a fresh Debian/Ubuntu machine.
#
#   1. System packages, from apt-get, only those missing: the venv module of the Python that
#      makes the project environment, gdb, gcc/g++ (the tests compile crashers), Chromium
#      with its driver (the HTML report is checked in a real browser), gdb-multiarch (cores of
#      other architectures), and for the aarch64 tests qemu-user-static and gcc-aarch64-linux-gnu.
#   2. The project's virtual environment `.venv`, because a distribution's Python is
#      "externally managed" (PEP 668) and refuses `pip install`. With a virtual environment
#      already active, that one is used and `.venv` becomes a link to it.
#   3. coreanalyze itself (editable) with its test extras (pytest, pystack, tensorflow-cpu, jax, ...).
#
# Afterwards: `.venv/bin/python -m pytest` runs the suite, `.venv/bin/coreanalyze` is the tool.
# PYTHON=/path/to/python3.X picks the interpreter that creates `.venv` (default: python3).
# Safe to run again: what is there already is kept.
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PYTHON=${PYTHON:-python3}

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root (or sudo) to run: $*"
    fi
}

# apt-get, quietly: one line per step; the whole output only when a step fails.
apt_updated=""
apt_step() {
    local log status=0
    log=$(mktemp)
    # dpkg refuses to run without ldconfig and start-stop-daemon on PATH, and a user's PATH
    # (PATH=/usr/local/bin:/usr/bin:/bin) often lacks the sbin directories that hold them.
    as_root env DEBIAN_FRONTEND=noninteractive PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" "$@" >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        cat "$log" >&2
        rm -f "$log"
        die "'$*' failed (exit $status)"
    fi
    rm -f "$log"
}
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install these by hand: $*"
    if [ -z "$apt_updated" ]; then
        say "apt-get update"
        apt_step apt-get update
        apt_updated=1
    fi
    say "apt-get install $*"
    apt_step apt-get install -y --no-install-recommends "$@"
}

# --- 1. system packages -----------------------------------------------------------------------
missing=()
command -v gdb >/dev/null 2>&1 || missing+=(gdb)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
# setfattr: the watch tests give files systemd-coredump's extended attributes.
command -v setfattr >/dev/null 2>&1 || missing+=(attr)
# strace: the capture tests run `coreanalyze run` under another tracer, which must step aside.
command -v strace >/dev/null 2>&1 || missing+=(strace)
# Cores from other architectures (aarch64 devices): a debugger that reads them, and what the
# tests need to make such cores here - a cross compiler and qemu's user-mode emulator.
command -v gdb-multiarch >/dev/null 2>&1 || missing+=(gdb-multiarch)
command -v qemu-aarch64-static >/dev/null 2>&1 || missing+=(qemu-user-static)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-aarch64-linux-gnu)
# apport's own writer of .crash files (the tests write real ones with it): Ubuntu's
# python3-problem-report where apt offers it; Debian's archive has no apport, and there the tests
# use apport's problem_report.py kept in tests/support/apport/.
/usr/bin/python3 -c 'import problem_report' >/dev/null 2>&1 || ! apt-cache show python3-problem-report >/dev/null 2>&1 || missing+=(python3-problem-report)
# CPython 3.14 and 3.15 come from a Debian unstable root (step 4).
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
# Debian's own python3 is one of the interpreters the tool is tested under: its venv module.
if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c "import ensurepip, venv" >/dev/null 2>&1; then
    missing+=("python$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv")
fi
[ -e /usr/aarch64-linux-gnu/lib/Scrt1.o ] || missing+=(libc6-dev-arm64-cross)
((${#missing[@]} == 0)) || apt_install "${missing[@]}"
# The aarch64 tests assemble a device's sysroot from Debian's arm64 packages (apt-get download,
# unpacked with dpkg -x, never installed); apt lists them only once arm64 is a known architecture.
if command -v dpkg >/dev/null 2>&1 && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    say "dpkg --add-architecture arm64; apt-get update"
    apt_step dpkg --add-architecture arm64
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null 2>&1; then
        # Ubuntu serves arm64 from its ports mirror only, which its default sources do not name:
        # undo, so that apt keeps working, and say what the aarch64 tests will miss.
        as_root dpkg --remove-architecture arm64
        apt_step apt-get update
        echo "setup: warning: apt has no arm64 packages here (on Ubuntu, add ports.ubuntu.com sources for arm64); the aarch64 tests need them" >&2
    fi
fi

# --- 2. the project environment ---------------------------------------------------------------
venv_works() { [ -x "$1/bin/python" ] && "$1/bin/python" -c "import sys; sys.exit(sys.prefix == sys.base_prefix)" 2>/dev/null; }

if [ -n "${VIRTUAL_ENV:-}" ] && [ ! -d "$VENV" -o -L "$VENV" ]; then
    # An active environment is the user's choice: install there, and let `.venv` name it so that
    # the README's commands work unchanged.
    venv_works "$VIRTUAL_ENV" || die "the active virtual environment $VIRTUAL_ENV has no working bin/python"
    if [ "$(readlink "$VENV" 2>/dev/null)" != "$VIRTUAL_ENV" ]; then
        rm -f "$VENV"
        ln -s "$VIRTUAL_ENV" "$VENV"
    fi
    say "using the active virtual environment $VIRTUAL_ENV (linked as $VENV)"
elif venv_works "$VENV"; then
    say "reusing $VENV ($("$VENV/bin/python" --version))"
else
    command -v "$PYTHON" >/dev/null 2>&1 || die "no '$PYTHON' found; install Python 3.10 or newer, or set PYTHON=/path/to/python3"
    "$PYTHON" -c "import sys; sys.exit(sys.version_info < (3, 10))" \
        || die "$PYTHON is $("$PYTHON" --version 2>&1); coreanalyze needs Python 3.10 or newer"
    # Debian and Ubuntu ship venv's pip bootstrap (ensurepip) in a separate package.
    if ! "$PYTHON" -c "import ensurepip, venv" >/dev/null 2>&1; then
        apt_install "python$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv"
    fi
    rm -rf "$VENV"
    say "creating $VENV with $("$PYTHON" --version)"
    "$PYTHON" -m venv "$VENV"
fi

# --- 3. the package and its test extras -------------------------------------------------------
# The job tests run PyTorch ranks under torchrun on the CPU: torch 2.13's CPU build (~180 MB, about
# a minute to install) where pip's find-links offer it; the test extras only ask for torch>=2.1.
say "installing torch 2.13 (CPU) into $VENV for the job tests"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
say "installing coreanalyze[test] into $VENV (the first time downloads tensorflow-cpu and jax, ~700 MB)"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[test]"
# The crash guard's startup hook (COREANALYZE_GUARD=DIR arms every Python process): wheels
# install it into site-packages themselves, an editable install does not.
"$VENV/bin/coreanalyze" guard --install >/dev/null

# The op-instance tests build cores with an older TensorFlow too, in a virtual environment they
# make per test run; fill pip's cache with it now so that they install it from there.
say "filling pip's cache with $(cat tests/older_tensorflow.txt) for the tests"
older_wheels="$(mktemp -d)"
"$VENV/bin/python" -m pip download --quiet --disable-pip-version-check -r tests/older_tensorflow.txt -d "$older_wheels"
rm -rf "$older_wheels"

# The security-advisory tests run TensorFlow 2.10 (older than the advisories' fixes), which has
# wheels for CPython 3.10 only: its wheels are kept in a folder of their own, outside the
# repository, and the tests install them from there with --no-index into a virtual environment of
# pyenv's 3.10 (the one the interpreter tests use).
ADVISORY_WHEELS=${COREANALYZE_ADVISORY_WHEELS:-/var/cache/coreanalyze/wheels/advisory-tensorflow}
if [ "$(uname -m)" = x86_64 ]; then
    say "downloading $(grep -v '^#' tests/advisory_tensorflow.txt | xargs) (CPython 3.10 wheels) into $ADVISORY_WHEELS"
    as_root mkdir -p "$ADVISORY_WHEELS"
    as_root chown "$(id -u):$(id -g)" "$ADVISORY_WHEELS"
    "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
        --implementation cp --python-version 3.10 --abi cp310 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux2010_x86_64 \
        --platform manylinux1_x86_64 --platform linux_x86_64 --platform any \
        -r tests/advisory_tensorflow.txt -d "$ADVISORY_WHEELS"
fi

# --- 4. the newer Pythons: 3.14 and 3.15 from Debian unstable --------------------------------
# The tests run crashers (and the tool itself) under CPython 3.14 and 3.15, which this machine's
# distribution does not have: Debian unstable's are installed into a root of their own, kept
# between runs outside the repository, and run with chroot. Debian's 3.13 beside them is the
# same toolchain's build of the version before (the speed comparison); the -dbg packages bring
# the interpreters' and glibc's debug info, -dev their headers (the walker's tables are checked
# against them), and TensorFlow's first cp314 wheels are installed there for a TensorFlow crash
# on 3.14.
SID_ROOT=${COREANALYZE_SID_ROOT:-/var/cache/coreanalyze/sid-root}
SID_PACKAGES=(python3.13 python3.13-dbg python3.14 python3.14-dbg python3.14-venv libpython3.14-dev
              python3.15 python3.15-dbg python3.15-venv libpython3.15-dev libc6-dbg gdb gcc libc6-dev
              ca-certificates)
SID_MIRROR=${COREANALYZE_SID_MIRROR:-http://deb.debian.org/debian}
sid_missing() {
    local p
    for p in "${SID_PACKAGES[@]}"; do
        as_root chroot "$SID_ROOT" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}
if [ ! -x "$SID_ROOT/usr/bin/python3.15" ]; then
    command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
    say "debootstrap sid into $SID_ROOT (CPython 3.14 and 3.15, about a minute)"
    as_root rm -rf "$SID_ROOT.partial"
    as_root mkdir -p "$(dirname "$SID_ROOT")"
    apt_step debootstrap --variant=minbase --include="$(IFS=,; echo "${SID_PACKAGES[*]}")" sid "$SID_ROOT.partial" "$SID_MIRROR"
    as_root rm -rf "$SID_ROOT"
    as_root mv "$SID_ROOT.partial" "$SID_ROOT"
fi
# The root reaches the package registries as this machine does: its name servers and its CA
# bundle (which holds any CA a proxy on the way signs with).
as_root cp /etc/resolv.conf "$SID_ROOT/etc/resolv.conf"
as_root mkdir -p "$SID_ROOT/etc/coreanalyze"
as_root cp "${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}" "$SID_ROOT/etc/coreanalyze/host-ca.crt"
sid_chroot() { as_root chroot "$SID_ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PIP_CERT=/etc/coreanalyze/host-ca.crt SSL_CERT_FILE=/etc/coreanalyze/host-ca.crt DEBIAN_FRONTEND=noninteractive "$@"; }
missing_sid=$(sid_missing)
if [ -n "$missing_sid" ]; then
    say "installing into $SID_ROOT: $(echo $missing_sid)"
    # A mirror may serve unstable's index past its Valid-Until date (a frozen snapshot).
    apt_step chroot "$SID_ROOT" apt-get -o Acquire::Check-Valid-Until=false update
    # shellcheck disable=SC2086
    apt_step chroot "$SID_ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing_sid
fi
TF314=$(cat tests/tensorflow_py314.txt)
if ! sid_chroot /opt/tensorflow-py314/bin/python -c "import tensorflow" >/dev/null 2>&1; then
    say "installing $TF314 for Python 3.14 in $SID_ROOT (~600 MB)"
    sid_chroot python3.14 -m venv /opt/tensorflow-py314
    sid_chroot /opt/tensorflow-py314/bin/python -m pip install --quiet --disable-pip-version-check --pre "$TF314"
fi

# --- 5. a free-threaded CPython: 3.13t, built from Debian trixie's python3.13 source ------------
# No distribution ships a free-threaded interpreter these tests can run, so one is built once per
# machine from the source package (about 4 minutes on two cores) and kept outside the repository.
# Only the upstream tarball is used. apt reads trixie's source index from a list of its own under
# the build's directory: this machine's apt sources stay as they are.
PY313T=${COREANALYZE_PY313T:-/var/cache/coreanalyze/python3.13t}
PY313T_MIRROR=${COREANALYZE_PY313T_MIRROR:-http://deb.debian.org/debian}
if ! "$PY313T/python" -c "import sys, ctypes; sys.exit(sys._is_gil_enabled())" >/dev/null 2>&1; then
    ft_missing=()
    command -v make >/dev/null 2>&1 || ft_missing+=(make)
    command -v xz >/dev/null 2>&1 || ft_missing+=(xz-utils)
    [ -e /usr/include/ffi.h ] || ls /usr/include/*/ffi.h >/dev/null 2>&1 || ft_missing+=(libffi-dev)
    # Debian's archive key, to check trixie's index (Ubuntu has it as a package too).
    [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || ft_missing+=(debian-archive-keyring)
    ((${#ft_missing[@]} == 0)) || apt_install "${ft_missing[@]}"
    say "building a free-threaded CPython 3.13 into $PY313T (about 4 minutes)"
    ft_work="$PY313T.partial"
    as_root rm -rf "$ft_work"
    as_root mkdir -p "$ft_work/apt/lists/partial" "$ft_work/apt/cache/archives/partial" "$ft_work/src"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $PY313T_MIRROR trixie main" \
        | as_root tee "$ft_work/apt/sources.list" >/dev/null
    ft_apt=(-o "Dir::Etc::SourceList=$ft_work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$ft_work/apt/lists" -o "Dir::Cache=$ft_work/apt/cache")
    apt_step apt-get "${ft_apt[@]}" update
    (cd "$ft_work/src" && apt_step apt-get "${ft_apt[@]}" source --download-only python3.13)
    ft_tarball=$(ls "$ft_work"/src/python3.13_3.13.*.orig.tar.xz | head -n1)
    as_root tar -xJf "$ft_tarball" -C "$ft_work" --strip-components=1
    as_root rm -rf "$ft_work/src" "$ft_work/apt"
    # The default optimization (-O3 -g): the interpreter as users run it, with its debug info.
    (cd "$ft_work" && apt_step ./configure --disable-gil --without-ensurepip && apt_step make -j2)
    "$ft_work/python" -c "import sys, ctypes; sys.exit(sys._is_gil_enabled())" \
        || die "the build in $ft_work is not a free-threaded Python with ctypes"
    as_root rm -rf "$PY313T"
    as_root mv "$ft_work" "$PY313T"
fi

"$VENV/bin/coreanalyze" --help >/dev/null
say "done: $("$VENV/bin/python" --version), $(gdb --version | head -n1)"
say "run the tests: .venv/bin/python -m pytest"
say "run the tool:  .venv/bin/coreanalyze CORE --python PATH   (or: export PATH=\"$PWD/$VENV/bin:\$PATH\")"
