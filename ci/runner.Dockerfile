# The harness alone, installed non-editable; peers run from their own images (--in-docker)
# through the Docker engine whose socket is mounted (see docker-compose.yml), so this
# image holds no peer toolchain. It works from any working directory: the suite's data is
# under /opt/acemq-interop/share/acemq-interop (the install's data files), the peers'
# manifests under /opt/acemq-interop/peers (ACEMQ_INTEROP_PEER_PATH).
#   docker build -f ci/runner.Dockerfile -t acemq-interop/runner .
#   docker run --rm --network host -v /var/run/docker.sock:/var/run/docker.sock acemq-interop/runner \
#       run --in-docker --broker amqp://guest:guest@127.0.0.1:5672/
# With the usual registries the base is python:3.11-slim and the harness's dependencies
# come from PyPI. Where images cannot be pulled, give a Debian base (ci/images.sh:
# BASE_IMAGE=acemq-interop/base:bookworm): Debian's python3 packages are used instead.
ARG BASE_IMAGE=python:3.11-slim

# The docker CLI only (Debian's docker.io, whose engine half is left behind).
FROM ${BASE_IMAGE} AS docker-cli
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker.io \
 && cp /usr/bin/docker /docker

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then \
      python3 -m venv /opt/acemq-interop; \
    else \
      apt-get update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
           python3 python3-venv python3-setuptools python3-pika python3-yaml python3-jsonschema \
           python3-rich python3-jinja2 python3-junit.xml python3-wheel \
      && rm -rf /var/lib/apt/lists/* \
      && python3 -m venv --system-site-packages /opt/acemq-interop; \
    fi
COPY --from=docker-cli /docker /usr/local/bin/docker
COPY pyproject.toml README.md /tmp/acemq-interop-src/
COPY acemq_interop /tmp/acemq-interop-src/acemq_interop
COPY catalogue /tmp/acemq-interop-src/catalogue
COPY scenarios /tmp/acemq-interop-src/scenarios
COPY known-failures /tmp/acemq-interop-src/known-failures
COPY docs /tmp/acemq-interop-src/docs
COPY peers/python /tmp/acemq-interop-src/peers/python
# Offline where Debian gave the dependencies (the venv sees them), from PyPI otherwise.
RUN cd /tmp/acemq-interop-src \
 && if python3 -c 'import pika, yaml, jsonschema, rich, jinja2, junit_xml' 2>/dev/null; then \
      /opt/acemq-interop/bin/pip install --no-cache-dir --no-deps --no-build-isolation --no-index . ; \
    else \
      /opt/acemq-interop/bin/pip install --no-cache-dir . ; \
    fi \
 && cd / && rm -rf /tmp/acemq-interop-src
COPY peers /opt/acemq-interop/peers
ENV PATH=/opt/acemq-interop/bin:$PATH ACEMQ_INTEROP_PEER_PATH=/opt/acemq-interop/peers
WORKDIR /work
# Every module imports (a dependency missing from the image fails the build, not a run).
RUN acemq-interop list >/dev/null \
 && /opt/acemq-interop/bin/python -c 'import importlib, pkgutil, acemq_interop; [importlib.import_module(m.name) for m in pkgutil.walk_packages(acemq_interop.__path__, "acemq_interop.") if not m.name.endswith("__main__")]'
ENTRYPOINT ["acemq-interop"]
