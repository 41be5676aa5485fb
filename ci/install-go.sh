#!/bin/sh
# Installs what the Go peer needs on a Debian 12 machine (as root) and builds
# it: Go 1.19 and amqp091-go 1.5.0 from Debian, no Go module proxy. Idempotent.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/peers/go"

. "$here/ci/apt.sh"
apt_install golang-go golang-github-rabbitmq-amqp091-go-dev

# go.sh builds against Debian's source tree through go.debian.mod.
sh "$peer/go.sh" build -o bin/peer ./cmd/peer
echo "install-go: built $peer/bin/peer ($(go version | cut -d' ' -f3))"
