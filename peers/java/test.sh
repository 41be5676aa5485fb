#!/bin/sh
# Runs the binding's unit tests (pure logic, no broker) with JUnit 5's console launcher.
set -eu
cd "$(dirname "$0")"
JUNIT=${JUNIT:-${JAVA_LIBS:-/usr/share/java}/junit-platform-console-standalone.jar}
[ -d build/test-classes ] || ./build.sh
# The launcher's --class-path does not expand "dir/*" as java does: name each jar.
CP=build/classes:build/peer-classes:build/test-classes
for jar in build/lib/*.jar; do CP=$CP:$jar; done
exec java -jar "$JUNIT" --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests \
    --class-path "$CP" --scan-classpath build/test-classes
