#!/bin/sh
# Builds the peer with plain javac from the jars Debian installs (no Maven Central needed):
# src/main/java -> build/classes, src/test/java -> build/test-classes, dependencies -> build/lib.
# JAVA_LIBS points elsewhere when the jars live somewhere else.
set -eu
cd "$(dirname "$0")"
JAVA_LIBS=${JAVA_LIBS:-/usr/share/java}
JUNIT=${JUNIT:-$JAVA_LIBS/junit-platform-console-standalone.jar}

rm -rf build/classes build/test-classes build/lib
mkdir -p build/classes build/test-classes build/lib
for jar in amqp-client slf4j-api slf4j-simple gson; do
    cp "$JAVA_LIBS/$jar.jar" build/lib/
done

javac -encoding UTF-8 --release 17 -Xlint:all,-serial -Werror -d build/classes \
    -cp "build/lib/*" $(find src/main/java -name '*.java')

if [ -f "$JUNIT" ] && [ -d src/test/java ]; then
    javac -encoding UTF-8 --release 17 -d build/test-classes \
        -cp "build/classes:build/lib/*:$JUNIT" $(find src/test/java -name '*.java')
else
    echo "build.sh: $JUNIT not found; unit tests not compiled" >&2
fi
