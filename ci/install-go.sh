#!/bin/sh
# Installs what the Go peer needs on a Debian 12 machine (as root) and builds
# it: Go 1.19 and amqp091-go 1.5.0 from Debian, no Go module proxy. Idempotent.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/peers/go"

packages="golang-go golang-github-rabbitmq-amqp091-go-dev"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-go: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-upgrade $missing >/dev/null 2>&1 || {
		apt-get update -qq
		apt-get install -y -qq --no-upgrade $missing >/dev/null
	}
fi

# go.sh builds against Debian's source tree through go.debian.mod.
sh "$peer/go.sh" build -o bin/peer ./cmd/peer
echo "install-go: built $peer/bin/peer ($(go version | cut -d' ' -f3))"
