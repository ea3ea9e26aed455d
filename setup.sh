#!/usr/bin/env bash
# Sets up everything coreanalyze and its test suite need on a fresh Debian/Ubuntu machine:
# gdb, a C/C++ compiler and Chromium (for the report's browser test) from apt when missing,
# then the package itself with its test extras (pytest, pystack, tensorflow-cpu) into the
# active Python. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
missing=()
command -v gdb >/dev/null 2>&1 || missing+=(gdb)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]} with apt-get"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

"$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[test]"
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
echo "setup: done ($("$PYTHON" --version), $(gdb --version | head -n1))"
