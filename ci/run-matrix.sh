#!/bin/sh
# The README's main command: set the machine up, then run the full matrix (every peer,
# every scenario) on a private RabbitMQ node the harness starts and stops itself.
# Extra arguments go to `acemq-interop run` (e.g. --peers go,python@0.3.0).
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
sh "$ROOT/ci/setup.sh"
cd "$ROOT"
exec .venv/bin/acemq-interop run "$@"
