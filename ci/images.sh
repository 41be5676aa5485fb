#!/bin/sh
# Builds every image of the project on an engine that can pull nothing (this machine kind,
# CI): local base images first, then the images users build from the same Dockerfiles
# with the usual registries, here given the local bases through build ARGs.
#
#   eval "$(sh ci/docker-engine.sh start)"; export DOCKER_HOST
#   sh ci/images.sh                 # everything
#   sh ci/images.sh go dotnet       # only these (peer names, runner, rabbitmq:3.10, rabbitmq:4.0, bases)
#
# Base images (made once, kept in the engine's data root; remade only when missing or,
# for .NET, when the installed SDK's version changes):
#   acemq-interop/base:bookworm, acemq-interop/base:trixie   debootstrap --variant=minbase, docker import
#   acemq-interop/dotnet-sdk:10.0      that bookworm base + the SDK installed at /usr/share/dotnet
#   acemq-interop/dotnet-runtime:10.0  that bookworm base + the SDK's host and Microsoft.NETCore.App
# Then (always `docker build`: the layer cache makes an unchanged image a few seconds):
#   acemq-interop/peer-NAME for every peers/*/peer.yaml with docker.image (its own unit
#   tests run in the build), acemq-interop/runner, acemq-interop/rabbitmq:3.10 (bookworm's
#   rabbitmq-server) and acemq-interop/rabbitmq:4.0 (trixie's).
# Builds use the classic builder with --network host (apt, NuGet and npm reach out from
# the build, over the host's network; no bridge exists on the CI engine) and never pull.
# Each build's log is kept in $ACEMQ_IMAGES_LOG_DIR (default out/images) and its tail is
# printed when it fails. Timings go to stdout, one line per image.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$ROOT"
. ci/apt.sh

MIRROR=${ACEMQ_DEBIAN_MIRROR:-http://deb.debian.org/debian}
DOTNET_DIR=${ACEMQ_DOTNET_DIR:-/usr/share/dotnet}
# The CA bundle the host trusts: where outbound TLS is re-signed by a local CA that Debian's
# store lacks (as on this machine kind), builds inside the local bases trust it too.
HOST_CA=${ACEMQ_HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
LOG_DIR=${ACEMQ_IMAGES_LOG_DIR:-$ROOT/out/images}
PYTHON=${ACEMQ_PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
export DOCKER_BUILDKIT=0  # the classic builder: the same on Debian's docker 20.10 CLI and newer ones
mkdir -p "$LOG_DIR"

if ! docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
    echo "images: no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); start one: eval \"\$(sh ci/docker-engine.sh start)\"; export DOCKER_HOST" >&2
    exit 1
fi

now() { date +%s; }
has_image() { docker image inspect "$1" >/dev/null 2>&1; }
label_of() { docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

FAILED=""
# build TAG LOGNAME docker-build-args...: one image, its log kept, its time printed
build() {
    tag=$1; name=$2; shift 2
    log="$LOG_DIR/$name.log"
    t0=$(now)
    if docker build --network host --pull=false --force-rm -t "$tag" "$@" >"$log" 2>&1; then
        echo "images: $tag built in $(( $(now) - t0 ))s"
    else
        echo "images: $tag FAILED after $(( $(now) - t0 ))s; the end of $log:" >&2
        tail -n 40 "$log" >&2
        FAILED="$FAILED $tag"
    fi
}

base_image() {  # base_image SUITE: acemq-interop/base:SUITE from debootstrap
    tag="acemq-interop/base:$1"
    if has_image "$tag"; then echo "images: $tag present"; return 0; fi
    apt_install debootstrap
    t0=$(now)
    dir=$(mktemp -d /var/tmp/acemq-interop-rootfs.XXXXXX)
    if ! debootstrap --variant=minbase "$1" "$dir" "$MIRROR" >"$LOG_DIR/base-$1.log" 2>&1; then
        echo "images: debootstrap $1 FAILED; the end of $LOG_DIR/base-$1.log:" >&2
        tail -n 20 "$LOG_DIR/base-$1.log" >&2
        rm -rf "$dir"
        FAILED="$FAILED $tag"
        return 0
    fi
    # apt inside builds: no recommends, no questions; keep the image's package lists empty.
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$dir/etc/apt/apt.conf.d/90acemq-interop"
    rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
    # The host's CA bundle: as the bundle until ca-certificates is installed, and as a local
    # CA that update-ca-certificates then adds to Debian's (NuGet, npm and pip read it).
    if [ -f "$HOST_CA" ]; then
        mkdir -p "$dir/usr/local/share/ca-certificates" "$dir/etc/ssl/certs"
        cp "$HOST_CA" "$dir/usr/local/share/ca-certificates/acemq-interop-host-bundle.crt"
        cp "$HOST_CA" "$dir/etc/ssl/certs/ca-certificates.crt"
    fi
    tar -C "$dir" -c . | docker import \
        -c 'ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
        -c 'CMD ["bash"]' \
        -m "debootstrap --variant=minbase $1" - "$tag" >/dev/null
    rm -rf "$dir"
    echo "images: $tag made by debootstrap in $(( $(now) - t0 ))s"
}

dotnet_bases() {
    sdk_version=$("$DOTNET_DIR/dotnet" --version 2>/dev/null || true)
    if [ -z "$sdk_version" ]; then
        echo "images: no .NET SDK at $DOTNET_DIR: the .NET peer needs acemq-interop/dotnet-sdk:10.0 (or mcr.microsoft.com/dotnet/sdk:10.0 where it can be pulled)" >&2
        FAILED="$FAILED acemq-interop/dotnet-sdk:10.0"
        return 0
    fi
    base_id=$(docker image inspect --format '{{.Id}}' acemq-interop/base:bookworm 2>/dev/null || true)
    key="$sdk_version on $base_id"
    if [ "$(label_of acemq-interop/dotnet-sdk:10.0 org.acemq-interop.dotnet-sdk)" = "$key" ]; then
        echo "images: acemq-interop/dotnet-sdk:10.0 present (SDK $sdk_version)"
    else
        # The context is the installed SDK itself (about 600 MB, sent once).
        build acemq-interop/dotnet-sdk:10.0 dotnet-sdk -f "$ROOT/ci/dotnet-sdk.Dockerfile" \
            --build-arg BASE_IMAGE=acemq-interop/base:bookworm --label "org.acemq-interop.dotnet-sdk=$key" \
            --build-arg "NUGET_CERT_REVOCATION_MODE=${NUGET_CERT_REVOCATION_MODE:-online}" "$DOTNET_DIR"
    fi
    if [ "$(label_of acemq-interop/dotnet-runtime:10.0 org.acemq-interop.dotnet-sdk)" = "$key" ]; then
        echo "images: acemq-interop/dotnet-runtime:10.0 present"
    else
        empty=$(mktemp -d)
        build acemq-interop/dotnet-runtime:10.0 dotnet-runtime -f "$ROOT/ci/dotnet-runtime.Dockerfile" \
            --build-arg SDK_IMAGE=acemq-interop/dotnet-sdk:10.0 --build-arg BASE_IMAGE=acemq-interop/base:bookworm \
            --label "org.acemq-interop.dotnet-sdk=$key" "$empty"
        rmdir "$empty"
    fi
}

# The local bases each peer's Dockerfile is given (its ARGs default to the official images).
# ACEMQ_IMAGE_TESTS=0 builds them without running each peer's unit tests inside (the
# project's own tests run those once, outside the images: tests/test_peer_unit_tests.py).
peer_build_args() {
    tests="--build-arg RUN_TESTS=${ACEMQ_IMAGE_TESTS:-1}"
    case "$1" in
        dotnet) echo "--build-arg SDK_IMAGE=acemq-interop/dotnet-sdk:10.0 --build-arg RUNTIME_IMAGE=acemq-interop/dotnet-runtime:10.0 $tests" ;;
        *) echo "--build-arg BASE_IMAGE=acemq-interop/base:bookworm --build-arg BUILD_IMAGE=acemq-interop/base:bookworm $tests" ;;
    esac
}

# name<TAB>folder<TAB>dockerfile<TAB>image for every peer manifest with docker.image
peer_list() {
    "$PYTHON" - "$ROOT" <<'EOF'
import sys
from pathlib import Path
import yaml
root = Path(sys.argv[1])
for path in sorted((root / "peers").glob("*/peer.yaml")):
    data = yaml.safe_load(path.read_text()) or {}
    docker = data.get("docker") or {}
    if docker.get("image"):
        print("\t".join([str(data["name"]), path.parent.name, str(docker.get("dockerfile", "Dockerfile")), str(docker["image"])]))
EOF
}

wanted() {  # wanted NAME: selected by the arguments (none = everything)
    [ -z "$SELECTION" ] && return 0
    for w in $SELECTION; do [ "$w" = "$1" ] && return 0; done
    return 1
}

SELECTION="$*"
T_ALL=$(now)

base_image bookworm
if wanted rabbitmq:4.0 || wanted bases; then base_image trixie; fi
if [ -z "$SELECTION" ] || wanted dotnet || wanted bases; then dotnet_bases; fi

peer_list >"$LOG_DIR/peers.tsv"
while IFS="$(printf '\t')" read -r name folder dockerfile image; do
    wanted "$name" || continue
    # The repository root is every peer's context: peer tests find catalogue/ by walking up.
    # shellcheck disable=SC2046
    build "$image" "peer-$name" -f "peers/$folder/$dockerfile" $(peer_build_args "$name") \
        --label org.acemq-interop.peer="$name" .
done <"$LOG_DIR/peers.tsv"

if wanted runner; then
    build acemq-interop/runner runner -f ci/runner.Dockerfile --build-arg BASE_IMAGE=acemq-interop/base:bookworm .
fi
if wanted rabbitmq:3.10; then
    build acemq-interop/rabbitmq:3.10 rabbitmq-3.10 -f ci/rabbitmq/Dockerfile \
        --build-arg BASE_IMAGE=acemq-interop/base:bookworm ci/rabbitmq
fi
if wanted rabbitmq:4.0; then
    build acemq-interop/rabbitmq:4.0 rabbitmq-4.0 -f ci/rabbitmq/Dockerfile \
        --build-arg BASE_IMAGE=acemq-interop/base:trixie ci/rabbitmq
fi

# Superseded layers (an image rebuilt after a change leaves its old one untagged): gone,
# so the stable data root does not grow run after run. The current images' layers stay.
docker image prune -f >/dev/null 2>&1 || true
echo "images: done in $(( $(now) - T_ALL ))s"
docker images --filter 'reference=acemq-interop/*' --format '{{.Repository}}:{{.Tag}}\t{{.Size}}'
if [ -n "$FAILED" ]; then
    echo "images: FAILED:$FAILED" >&2
    exit 1
fi
