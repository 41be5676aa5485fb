#!/bin/sh
# Debian's Chromium, for the report's browser tests (tests/broker/test_report_browser.py).
# Idempotent: installs nothing when /usr/bin/chromium is there; never upgrades other packages.
set -eu
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-upgrade --no-install-recommends chromium fonts-dejavu-core >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y --no-upgrade --no-install-recommends chromium fonts-dejavu-core
fi
command -v chromium
