"""acemq-interop: the harness that runs YAML scenarios between language peers on RabbitMQ."""

__version__ = "0.3.0"  # the one place: pyproject.toml reads it (dynamic version)
