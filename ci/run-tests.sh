#!/bin/sh
# The README's test command: set the machine up, then run the project's own tests
# (unit tests, every peer's own unit tests, and the real-broker suite: the full matrix,
# the history profiles, every mutant of every peer, the harness's failure handling, and
# the containers: every image built, the full matrix --in-docker on RabbitMQ 3.10 and 4.0,
# and docker compose).
# A Docker engine is started for the tests (ci/docker-engine.sh) unless one answers, and
# stopped afterwards only if this script started it.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
sh "$ROOT/ci/setup.sh"
cd "$ROOT"
engine=$(sh ci/docker-engine.sh start) || { echo "run-tests: no Docker engine could be started" >&2; exit 1; }
eval "$engine"
export DOCKER_HOST
stop_engine() {
    if [ "${ACEMQ_DOCKER_STARTED:-0}" = 1 ]; then sh ci/docker-engine.sh stop || true; fi
}
trap 'stop_engine' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
status=0
# Each peer's unit tests run once, in tests/test_peer_unit_tests.py, not again inside every
# image build (ci/images.sh).
ACEMQ_IMAGE_TESTS=0
export ACEMQ_IMAGE_TESTS
# --durations: where the time went, in the CI log (no test is timed).
.venv/bin/python -m pytest -p no:cacheprovider --durations=25 "$@" || status=$?
exit "$status"
