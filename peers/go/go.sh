#!/bin/sh
# Runs the go command with the module file this machine can satisfy:
#  - go.debian.mod (offline, GOPROXY=off) where Debian's
#    golang-github-rabbitmq-amqp091-go-dev is installed;
#  - go.mod + go.sum (the Go module proxy) everywhere else.
# ACEMQ_GO_MODFILE=go.mod (or another file) overrides the choice.
set -e
cd "$(dirname "$0")"
modfile=${ACEMQ_GO_MODFILE:-}
if [ -z "$modfile" ] && [ -d /usr/share/gocode/src/github.com/rabbitmq/amqp091-go ]; then
	modfile=go.debian.mod
fi
if [ "$modfile" = go.debian.mod ]; then
	# The replace in go.debian.mod points at Debian's source tree; -mod=mod
	# lets go resolve it without a go.sum, and nothing is downloaded.
	export GOFLAGS="-mod=mod -modfile=go.debian.mod" GOPROXY=off
elif [ -n "$modfile" ] && [ "$modfile" != go.mod ]; then
	export GOFLAGS="-modfile=$modfile"
fi
exec go "$@"
