#!/bin/sh
# Prepares a fresh Debian 12 machine of this project's kind (as root) for the matrix and
# the tests: RabbitMQ and every peer's toolchain from Debian's packages, NuGet and npm,
# each peer built once, and the harness installed into the repo's .venv.
# Idempotent: installed packages stay where they are (apt-get install --no-upgrade).
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$ROOT"

. ci/apt.sh

apt_install rabbitmq-server curl docker-compose
# The Python one first: it makes the .venv the others' checks may use.
sh ci/install-python.sh
for script in ci/install-*.sh; do
    [ "$script" = ci/install-python.sh ] && continue
    echo "ci/setup.sh: $script"
    sh "$script"
done
.venv/bin/python -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null
echo "ci/setup.sh: ready ($(.venv/bin/acemq-interop doctor | tr '\n' ';'))"
