#!/bin/sh
# Installs what the harness and the Python reference peer need on Debian 12, as root,
# from Debian's packages (this machine kind reaches no PyPI), then makes the repo's
# .venv on top of them. Idempotent: installed packages are kept where they are.
set -eu

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
PACKAGES="python3-pika python3-yaml python3-jsonschema python3-pytest python3-junit.xml python3-rich python3-jinja2 python3-venv"

missing=""
for pkg in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-upgrade $missing >/dev/null 2>&1 || {
        apt-get update -q >/dev/null
        apt-get install -y -q --no-upgrade $missing >/dev/null
    }
fi

if [ ! -x "$ROOT/.venv/bin/python" ]; then
    /usr/bin/python3 -m venv --system-site-packages "$ROOT/.venv"
fi
"$ROOT/.venv/bin/python" -c 'import pika, yaml, jsonschema, pytest; print("python peer ready: pika", pika.__version__)'
