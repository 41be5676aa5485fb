#!/bin/sh
# Builds or tests the Java peer by the route this machine can take:
#  - Debian's jars (build.sh, test.sh: plain javac and JUnit's console launcher, offline)
#    where librabbitmq-client-java is installed, as on this project's machines;
#  - Maven everywhere else: `mvn package` with pom.xml, from Maven Central or whatever
#    repository the user's settings name; the jars are then laid out as build.sh does.
# ACEMQ_JAVA_ROUTE=debian or maven overrides the choice; MVN names the maven command.
#   sh java.sh build | sh java.sh test
set -eu
cd "$(dirname "$0")"
action=${1:?usage: java.sh build|test}
route=${ACEMQ_JAVA_ROUTE:-}
if [ -z "$route" ]; then
    if [ -f "${JAVA_LIBS:-/usr/share/java}/amqp-client.jar" ]; then route=debian; else route=maven; fi
fi
mvn=${MVN:-mvn}
case "$route:$action" in
    debian:build) exec sh build.sh ;;
    debian:test) exec sh test.sh ;;
    maven:build)
        # Tests run in `java.sh test`; the jars land where the manifest's run command looks.
        $mvn -q -B package -DskipTests
        # Fresh lib/ swapped in whole: no jar of an earlier build (or route) stays on the classpath.
        mkdir -p build
        rm -rf build/lib.new
        cp -r peer/target/lib build/lib.new
        rm -rf build/lib.old
        [ ! -d build/lib ] || mv build/lib build/lib.old
        mv build/lib.new build/lib
        rm -rf build/lib.old
        cp peer/target/acemq-java-peer-*.jar build/peer.jar.new && mv -f build/peer.jar.new build/peer.jar ;;
    maven:test) exec $mvn -B test ;;
    *) echo "java.sh: unknown route or action '$route:$action'" >&2; exit 2 ;;
esac
