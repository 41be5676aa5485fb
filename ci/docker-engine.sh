#!/bin/sh
# A Docker engine for CI and for this machine kind (Debian 12, as root, no init system).
#
#   eval "$(sh ci/docker-engine.sh start)"   # starts an engine if none answers; prints
#                                            # DOCKER_HOST=... and ACEMQ_DOCKER_STARTED=1|0
#   sh ci/docker-engine.sh stop              # stops the engine this script started, and only that one
#   sh ci/docker-engine.sh status
#
# `start` first asks the engine the environment names (DOCKER_HOST, else the default
# socket) and then the one this script starts; if one answers it is used as it is and
# nothing is started. Otherwise it installs Debian's docker.io (apt-get install
# --no-upgrade: kept where it is when installed) and starts a private dockerd:
#   data root  $ACEMQ_DOCKER_DATA_ROOT   (default /var/lib/acemq-interop/docker: a STABLE
#              place, so base images and build layers are cached between CI runs on
#              the same machine)
#   exec root  $ACEMQ_DOCKER_STATE/exec, socket $ACEMQ_DOCKER_STATE/docker.sock,
#   pid file   $ACEMQ_DOCKER_STATE/docker.pid (default state dir /run/acemq-interop-docker)
# with no default bridge and no iptables rules: every container of this project uses host
# networking, so all its traffic stays on loopback. The daemon's log is
# $ACEMQ_DOCKER_STATE/dockerd.log. stdout is two shell assignments: DOCKER_HOST, and
# ACEMQ_DOCKER_STARTED (1 when this call started the daemon, so the caller knows whether
# to stop it); progress goes to stderr.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
DATA_ROOT=${ACEMQ_DOCKER_DATA_ROOT:-/var/lib/acemq-interop/docker}
STATE=${ACEMQ_DOCKER_STATE:-/run/acemq-interop-docker}
SOCK="$STATE/docker.sock"
PIDFILE="$STATE/docker.pid"
OURS="$STATE/started-by-acemq-interop"
OUR_HOST="unix://$SOCK"
READY_BOUND_S=${ACEMQ_DOCKER_READY_S:-60}

say() { echo "docker-engine: $*" >&2; }

# The docker CLI on PATH (any version that speaks the engine's API), else Debian's.
docker_cli() {
    if command -v docker >/dev/null 2>&1; then docker "$@"; else /usr/bin/docker "$@"; fi
}

answers() {  # answers HOST: the engine at HOST answers `docker version`
    DOCKER_HOST=$1 timeout 10 sh -c 'if command -v docker >/dev/null 2>&1; then docker version --format "{{.Server.Version}}"; else /usr/bin/docker version --format "{{.Server.Version}}"; fi' >/dev/null 2>&1
}

our_pid() {  # the pid of the dockerd we started, if it still runs
    [ -f "$PIDFILE" ] || return 1
    pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    case "$(cat /proc/"$pid"/comm 2>/dev/null)" in dockerd) echo "$pid" ;; *) return 1 ;; esac
}

start() {
    for host in "${DOCKER_HOST:-}" unix:///var/run/docker.sock "$OUR_HOST"; do
        [ -n "$host" ] || continue
        if answers "$host"; then
            say "an engine answers at $host: using it (nothing started)"
            echo "DOCKER_HOST=$host"
            echo "ACEMQ_DOCKER_STARTED=0"
            return 0
        fi
    done
    if [ "$(id -u)" != 0 ]; then
        say "no Docker engine answers, and starting one needs root"
        exit 1
    fi
    . "$ROOT/ci/apt.sh"
    apt_install docker.io
    mkdir -p "$DATA_ROOT" "$STATE/exec"
    if pid=$(our_pid); then
        say "dockerd $pid (ours) runs but does not answer yet; waiting"
    else
        rm -f "$SOCK" "$PIDFILE"
        say "starting dockerd (data root $DATA_ROOT, socket $SOCK)"
        # setsid: the daemon outlives this script and a CI step's process group.
        setsid /usr/sbin/dockerd \
            --data-root "$DATA_ROOT" --exec-root "$STATE/exec" \
            -H "$OUR_HOST" --pidfile "$PIDFILE" \
            --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
            --userland-proxy=false --log-level=warn \
            </dev/null >"$STATE/dockerd.log" 2>&1 &
        touch "$OURS"
    fi
    waited=0
    while ! answers "$OUR_HOST"; do
        if [ "$waited" -ge "$READY_BOUND_S" ]; then
            say "dockerd did not answer within ${READY_BOUND_S}s; its log ends:"
            tail -n 20 "$STATE/dockerd.log" >&2 || true
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    say "dockerd ready (pid $(cat "$PIDFILE"), ${waited}s)"
    echo "DOCKER_HOST=$OUR_HOST"
    echo "ACEMQ_DOCKER_STARTED=1"
}

stop() {
    if [ ! -f "$OURS" ]; then
        say "no engine started by this script: nothing to stop"
        return 0
    fi
    if pid=$(our_pid); then
        say "stopping dockerd $pid"
        kill -TERM "$pid"
        waited=0
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$waited" -ge 30 ]; then
                say "dockerd $pid did not stop in 30s: killing it"
                kill -KILL "$pid" 2>/dev/null || true
                break
            fi
            sleep 1
            waited=$((waited + 1))
        done
        # containerd, which dockerd started, ends with it; wait for it to let go.
        sleep 1
    fi
    rm -f "$OURS" "$PIDFILE" "$SOCK"
}

status() {
    if pid=$(our_pid); then echo "ours: dockerd $pid at $OUR_HOST"; fi
    for host in "${DOCKER_HOST:-}" unix:///var/run/docker.sock "$OUR_HOST"; do
        [ -n "$host" ] || continue
        if answers "$host"; then echo "DOCKER_HOST=$host"; return 0; fi
    done
    echo "no engine answers"
    return 1
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
