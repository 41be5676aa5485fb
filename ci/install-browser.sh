#!/bin/sh
# Debian's Chromium, for the report's browser tests (tests/broker/test_report_browser.py).
# Idempotent: installs nothing that is there already; never upgrades other packages.
set -eu
# Also playwright-core (npm, no browser download) into tests/browser/node_modules.
here=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v chromium >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-upgrade --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1; then
        apt-get update -qq
        apt-get install -y --no-upgrade --no-install-recommends chromium fonts-dejavu-core
    fi
fi
command -v chromium
if [ ! -d "$here/tests/browser/node_modules/playwright-core" ]; then
    (cd "$here/tests/browser" && npm ci --no-audit --no-fund --ignore-scripts --silent)
fi
