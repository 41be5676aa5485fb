#!/bin/sh
# The README's test command: set the machine up, then run the project's own tests
# (unit tests, every peer's own unit tests, and the real-broker suite: the full matrix,
# the history profiles, every mutant of every peer, and the harness's failure handling).
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
sh "$ROOT/ci/setup.sh"
cd "$ROOT"
exec .venv/bin/python -m pytest -p no:cacheprovider "$@"
