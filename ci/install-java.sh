#!/bin/sh
# Installs what the Java peer needs on a Debian 12 machine (as root) and builds it:
# OpenJDK 17 and Debian's jars (amqp-client 5.0.0, slf4j, gson, JUnit 5), no Maven
# Central. Idempotent: installed packages are kept where they are.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
peer="$here/peers/java"

. "$here/ci/apt.sh"
apt_install openjdk-17-jdk-headless librabbitmq-client-java libslf4j-java libgoogle-gson-java junit5

sh "$peer/build.sh"
echo "install-java: built $peer/build/classes ($(javac -version 2>&1), librabbitmq-client-java $(dpkg-query -W -f='${Version}' librabbitmq-client-java))"
