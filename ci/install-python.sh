#!/bin/sh
# Installs what the harness and the Python reference peer need on Debian 12, as root,
# from Debian's packages (this machine kind reaches no PyPI), then makes the repo's
# .venv on top of them. Idempotent: installed packages are kept where they are.
set -eu

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
. "$ROOT/ci/apt.sh"
apt_install python3-pika python3-yaml python3-jsonschema python3-pytest python3-rich python3-jinja2 python3-venv python3-setuptools python3-junit.xml python3-junitparser

if [ ! -x "$ROOT/.venv/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$ROOT/.venv"
fi
"$ROOT/.venv/bin/python" -c 'import pika, yaml, jsonschema, pytest; print("python peer ready: pika", pika.__version__)'
