#!/bin/sh
# Entry point of acemq-interop/rabbitmq:*: writes the listeners chosen at start-up, then
# runs the server in the foreground (the official image's entrypoint where there is one).
#
# A node of a cluster of containers (`acemq-interop run --cluster N --broker-image IMAGE`)
# is also given:
#   ACEMQ_CLUSTER_SEED    the node it joins on its first boot (classic peer discovery);
#   ACEMQ_ERLANG_COOKIE   the cluster's shared Erlang cookie, written to the rabbitmq
#                         user's cookie file (and root's, for `docker exec rabbitmqctl`);
#   ERL_EPMD_PORT         the one epmd the cluster's nodes register with (a container of
#                         its own, so a node killed does not take the others' names away).
set -eu
cat >/etc/rabbitmq/conf.d/90-acemq-interop.conf <<CONF
listeners.tcp.default = 127.0.0.1:${ACEMQ_AMQP_PORT}
management.tcp.port = ${ACEMQ_MGMT_PORT}
management.tcp.ip = 127.0.0.1
loopback_users = none
collect_statistics_interval = 1000
CONF
if [ -n "${ACEMQ_CLUSTER_SEED:-}" ]; then
    cat >>/etc/rabbitmq/conf.d/90-acemq-interop.conf <<CONF
cluster_formation.peer_discovery_backend = classic_config
cluster_formation.classic_config.nodes.1 = ${ACEMQ_CLUSTER_SEED}
CONF
fi
if [ -n "${ACEMQ_ERLANG_COOKIE:-}" ]; then
    for home in /var/lib/rabbitmq /root; do
        [ -d "$home" ] || continue
        rm -f "$home/.erlang.cookie"
        (umask 077 && printf '%s' "$ACEMQ_ERLANG_COOKIE" >"$home/.erlang.cookie")
        chmod 0400 "$home/.erlang.cookie"
    done
    chown rabbitmq:rabbitmq /var/lib/rabbitmq/.erlang.cookie 2>/dev/null || true
    unset ACEMQ_ERLANG_COOKIE
fi
if [ -x /usr/local/bin/docker-entrypoint.sh ]; then
    exec /usr/local/bin/docker-entrypoint.sh rabbitmq-server
fi
exec rabbitmq-server
