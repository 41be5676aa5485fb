#!/bin/sh
# Installs the foreign peers (foreign/*/: stacks that are not acemq, run beside the bindings for
# the foreign-interop matrix) on Debian 12 (run as root). Node and npm come from the machine (or
# Debian's nodejs and npm packages when absent); each stack comes from the npm registry, pinned
# by its package-lock.json. Idempotent: npm ci runs only where node_modules is missing.
set -eu

. "$(dirname "$0")/apt.sh"
command -v node >/dev/null 2>&1 || apt_install nodejs
command -v npm >/dev/null 2>&1 || apt_install npm

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
for dir in "$ROOT"/foreign/*/; do
    [ -f "$dir/package-lock.json" ] || continue
    cd "$dir"
    if [ -d node_modules ]; then
        npm install --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
    else
        npm ci --no-audit --no-fund --loglevel=error >/dev/null
    fi
    node --check adapter.js
    echo "install-foreign: $(basename "$dir"): $(node -e 'const p=require("./package.json"); process.stdout.write(Object.entries(p.dependencies).map(([k,v])=>k+" "+v).join(", "))'), node $(node --version)"
done
