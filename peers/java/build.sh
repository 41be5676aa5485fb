#!/bin/sh
# Builds the peer with plain javac from the jars Debian installs (no Maven Central needed):
#   src/main/java (the binding)  -> build/classes, build/lib/acemq-java.jar
#   src/peer/java (the adapter)  -> build/peer-classes, build/peer.jar
#   src/test/java, src/peer-test/java (unit tests) -> build/test-classes
#   dependencies -> build/lib
# The adapter is compiled against the binding's classes but packed apart: its class in the
# binding's package (io.acemq.PeerPolicies) never enters the binding's jar.
# JAVA_LIBS points elsewhere when the jars live somewhere else.
set -eu
cd "$(dirname "$0")"
JAVA_LIBS=${JAVA_LIBS:-/usr/share/java}
JUNIT=${JUNIT:-$JAVA_LIBS/junit-platform-console-standalone.jar}

# Up to date: nothing under src/ (nor this script) is newer than the last build's jars, so
# a run's build step costs nothing when nothing changed (test.sh still compiles its tests).
if [ -f build/peer.jar ] && [ -f build/lib/acemq-java.jar ] && [ -d build/test-classes ] \
   && [ -z "$(find src build.sh -newer build/peer.jar -print 2>/dev/null | head -1)" ]; then
    echo "build.sh: build/ is up to date"
    exit 0
fi

# Build beside the old output and swap it in at the end, so a peer that is running (or a
# second build at the same time) never sees a half-written tree. The peer runs from
# build/peer.jar and build/lib/*.jar, each replaced by one rename: a running JVM keeps
# reading the files it opened, never a mix of two builds or a path that is briefly gone.
mkdir -p build/lib
work=$(mktemp -d build/.work.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/classes" "$work/peer-classes" "$work/test-classes" "$work/lib"
for jar in amqp-client slf4j-api slf4j-simple gson; do
    cp "$JAVA_LIBS/$jar.jar" "$work/lib/"
done

javac -encoding UTF-8 --release 17 -Xlint:all,-serial -Werror -d "$work/classes" \
    -cp "$work/lib/*" $(find src/main/java -name '*.java')
jar --create --file "$work/lib/acemq-java.jar" -C "$work/classes" .
javac -encoding UTF-8 --release 17 -Xlint:all,-serial -Werror -d "$work/peer-classes" \
    -cp "$work/classes:$work/lib/*" $(find src/peer/java -name '*.java')
jar --create --file "$work/peer.jar" -C "$work/peer-classes" .

if [ -f "$JUNIT" ]; then
    javac -encoding UTF-8 --release 17 -d "$work/test-classes" \
        -cp "$work/classes:$work/peer-classes:$work/lib/*:$JUNIT" $(find src/test/java src/peer-test/java -name '*.java')
else
    echo "build.sh: $JUNIT not found; unit tests not compiled" >&2
fi

for jar in "$work"/lib/*.jar; do
    name=$(basename "$jar")
    cmp -s "$jar" "build/lib/$name" || mv -f "$jar" "build/lib/$name"
done
mv -f "$work/peer.jar" build/peer.jar

# The class trees are for the unit tests (test.sh).
for part in classes peer-classes test-classes; do
    rm -rf "build/$part.old"
    [ ! -e "build/$part" ] || mv "build/$part" "build/$part.old"
    mv "$work/$part" "build/$part"
    rm -rf "build/$part.old"
done
