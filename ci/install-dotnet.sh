#!/bin/sh
# Installs what the .NET peer needs on Debian 12 (as root) and builds it. The .NET SDK 10
# is on this machine kind already; elsewhere it comes from the dotnet-sdk-10.0 package when
# an apt source offers it (Debian 12's own archive does not). RabbitMQ.Client 7.2.2 and the
# xunit packages come from NuGet. Idempotent: a restore and a build with nothing to do are
# no-ops.
set -eu
peer="$(cd "$(dirname "$0")/.." && pwd)/peers/dotnet"
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1

if ! command -v dotnet >/dev/null 2>&1; then
  echo "install-dotnet: installing dotnet-sdk-10.0"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-upgrade dotnet-sdk-10.0 >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-upgrade dotnet-sdk-10.0 >/dev/null
  } || {
    echo "install-dotnet: no 'dotnet' on PATH and no apt source offers dotnet-sdk-10.0;" >&2
    echo "install-dotnet: install the .NET SDK 10 (Microsoft's packages or installer), then rerun" >&2
    exit 1
  }
fi

major=$(dotnet --version | cut -d. -f1)
if [ "$major" -lt 10 ]; then
  echo "install-dotnet: the peer targets net10.0 but dotnet is $(dotnet --version)" >&2
  exit 1
fi

cd "$peer"
dotnet restore acemq-dotnet.slnx --nologo -v q
dotnet build Acemq.Peer/Acemq.Peer.csproj -c Release --no-restore --nologo -v q
dotnet build Acemq.Tests/Acemq.Tests.csproj --no-restore --nologo -v q
echo "install-dotnet: built $peer/Acemq.Peer/bin/Release/net10.0/Acemq.Peer.dll (.NET SDK $(dotnet --version))"
