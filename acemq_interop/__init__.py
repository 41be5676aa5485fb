"""acemq-interop: the harness that runs YAML scenarios between language peers on RabbitMQ."""

__version__ = "0.1.0"
