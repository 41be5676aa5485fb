#!/bin/sh
# The peer's build step: makes sure the interpreter that runs it ($1: the harness's
# python) can import pika, by the route this machine has:
#  - Debian's python3-pika (ci/install-python.sh; the repo's .venv sees it through
#    --system-site-packages): nothing to install, nothing fetched;
#  - else pip with requirements.txt from the package index (PyPI, or PIP_INDEX_URL).
# Nothing to compile: the binding and the adapter are plain Python.
set -e
cd "$(dirname "$0")"
python=${1:-python3}
if "$python" -c 'import pika' 2>/dev/null; then
	"$python" -c 'import pika; print("pika", pika.__version__, "from", pika.__file__)'
else
	"$python" -m pip install --quiet -r requirements.txt
fi
exec "$python" -c 'import acemq, acemq_peer'
