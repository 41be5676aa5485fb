#!/bin/sh
# Installs what the Java peer needs on a Debian 12 machine (as root) and builds it:
# OpenJDK 17 and Debian's jars (amqp-client 5.0.0, slf4j, gson, JUnit 5), no Maven
# Central. Idempotent: installed packages are kept where they are.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/peers/java"

packages="openjdk-17-jdk-headless librabbitmq-client-java libslf4j-java libgoogle-gson-java junit5"
missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-java: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-upgrade $missing >/dev/null 2>&1 || {
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-upgrade $missing >/dev/null
	}
fi

sh "$peer/build.sh"
echo "install-java: built $peer/build/classes ($(javac -version 2>&1), librabbitmq-client-java $(dpkg-query -W -f='${Version}' librabbitmq-client-java))"
