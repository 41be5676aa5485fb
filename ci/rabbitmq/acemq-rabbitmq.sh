#!/bin/sh
# Entry point of acemq-interop/rabbitmq:*: writes the listeners chosen at start-up, then
# runs the server in the foreground (the official image's entrypoint where there is one).
set -eu
cat >/etc/rabbitmq/conf.d/90-acemq-interop.conf <<CONF
listeners.tcp.default = 127.0.0.1:${ACEMQ_AMQP_PORT}
management.tcp.port = ${ACEMQ_MGMT_PORT}
management.tcp.ip = 127.0.0.1
loopback_users = none
collect_statistics_interval = 1000
CONF
if [ -x /usr/local/bin/docker-entrypoint.sh ]; then
    exec /usr/local/bin/docker-entrypoint.sh rabbitmq-server
fi
exec rabbitmq-server
