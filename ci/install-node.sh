#!/bin/sh
# Installs and builds the Node/TypeScript peer on Debian 12 (run as root). Node and npm
# come from the machine (or Debian's nodejs and npm packages when absent); amqplib and
# TypeScript come from the npm registry, pinned by peers/node/package-lock.json.
# Idempotent: installed packages are kept where they are, and npm ci runs only when
# node_modules is missing.
set -eu

. "$(dirname "$0")/apt.sh"
command -v node >/dev/null 2>&1 || apt_install nodejs
command -v npm >/dev/null 2>&1 || apt_install npm

cd "$(dirname "$0")/../peers/node"
if [ -d node_modules ]; then
  npm install --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
else
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
npx tsc -p .
echo "install-node: $(node -e 'const p=require("./package.json"); process.stdout.write(p.name+" "+p.version)') on amqplib $(node -p 'require("./node_modules/amqplib/package.json").version'), node $(node --version)"
