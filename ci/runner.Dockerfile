# The harness alone: peers run from their own images (--in-docker).
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends docker.io && rm -rf /var/lib/apt/lists/*
WORKDIR /work
COPY pyproject.toml README.md ./
COPY harness harness
COPY reference_impl reference_impl
COPY scenarios scenarios
COPY peers peers
COPY expectations expectations
COPY docs docs
RUN pip install --no-cache-dir .
ENTRYPOINT ["acemq-interop"]
