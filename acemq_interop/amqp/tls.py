"""TLS for a run: certificates made for it, the CA a run trusts, and the harness's own TLS clients.

`acemq-interop run --tls` makes a CA and a server certificate signed by it with the
`openssl` CLI (subjectAltName `DNS:localhost, IP:127.0.0.1`, valid one day), in a private
folder that `run_certificates` removes at the end whatever happens. The CA's key is deleted
as soon as the server certificate is signed, so nothing can mint another certificate the
run would trust. Layout (the top folder is 0700; only its parts are handed out):

    DIR/ca/ca.pem                   hello's `tls.ca_file`; mounted read-only into peer containers
    DIR/server/{server.pem,server.key,ca.pem}
                                    the broker's: copied into a private node's base dir, or
                                    mounted read-only into a broker container

`--broker amqps://... --ca-cert FILE` brings its own CA instead: `check_ca_file` makes sure
it exists and parses before any broker is touched. The probe, the transcript tracer and
every peer verify the broker's certificate chain against that CA and the host name too
(`client_context`); nothing here ever accepts any certificate.
"""
from __future__ import annotations

import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..core.errors import BrokerError, UsageError

DEFAULT_TLS_PORT = 5671
VALID_DAYS = 1  # short-lived: a run's certificates are worth nothing after it
OPENSSL_BOUND_S = 60.0
# What RabbitMQ's ssl_options need for a server-only TLS listener (no client certificates).
_SERVER_EXTENSIONS = (
    "basicConstraints = critical, CA:FALSE\n"
    "keyUsage = critical, digitalSignature, keyEncipherment\n"
    "extendedKeyUsage = serverAuth\n"
    "subjectAltName = DNS:localhost, IP:127.0.0.1\n"
)


@dataclass(frozen=True)
class Certificates:
    """The certificates of one TLS run (see the module's layout)."""

    dir: Path
    ca_file: Path
    server_cert: Path
    server_key: Path
    server_ca: Path  # the CA again, beside the server's files (the broker's cacertfile)

    @property
    def server_dir(self) -> Path:
        return self.server_cert.parent


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BrokerError("--tls needs the openssl command to make the run's certificates (Debian: apt-get install openssl)")
    try:
        done = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, timeout=OPENSSL_BOUND_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerError(f"openssl {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise BrokerError(f"openssl {args[0]} exited {done.returncode}: {tail}")


def make_certificates(where: Path) -> Certificates:
    """A CA and a server certificate signed by it, in `where` (an empty private folder)."""
    ca_dir, server_dir = where / "ca", where / "server"
    ca_dir.mkdir(mode=0o755)
    server_dir.mkdir(mode=0o755)
    tag = secrets.token_hex(4)
    ca_key, ca_pem = where / "ca.key", ca_dir / "ca.pem"
    days = str(VALID_DAYS)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", days,
             "-subj", f"/CN=acemq-interop run CA {tag}", "-keyout", str(ca_key), "-out", str(ca_pem),
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=where)
    key, csr, pem = server_dir / "server.key", where / "server.csr", server_dir / "server.pem"
    (where / "server.ext").write_text(_SERVER_EXTENSIONS, encoding="ascii")
    _openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-sha256", "-subj", "/CN=localhost",
             "-keyout", str(key), "-out", str(csr), cwd=where)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key),
             "-set_serial", f"0x{secrets.token_hex(8)}", "-days", days, "-sha256",
             "-extfile", str(where / "server.ext"), "-out", str(pem), cwd=where)
    # Nothing may sign another certificate this run trusts.
    for spent in (ca_key, csr, where / "server.ext"):
        spent.unlink(missing_ok=True)
    server_ca = server_dir / "ca.pem"
    shutil.copyfile(ca_pem, server_ca)
    # The top folder (0700) keeps the host's other users out; inside it the parts are
    # readable, because a broker container's `rabbitmq` user reads the mounted server/ folder.
    for path in (ca_pem, server_ca, pem, key):
        path.chmod(0o644)
    return Certificates(where, ca_pem, pem, key, server_ca)


@contextmanager
def run_certificates() -> Iterator[Certificates]:
    """Certificates for one run, in a private temporary folder removed at the end whatever happens."""
    where = Path(tempfile.mkdtemp(prefix="acemq-interop-tls-"))
    try:
        where.chmod(0o700)
        yield make_certificates(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def check_ca_file(path: str) -> Path:
    """`--ca-cert FILE`: an existing PEM file with at least one CA certificate; its absolute path."""
    ca = Path(path).expanduser()
    if not ca.is_file():
        raise UsageError(f"--ca-cert {path}: no such file (give the PEM file of the CA that signed the broker's certificate)")
    try:
        context = ssl.create_default_context(cafile=str(ca))
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise UsageError(f"--ca-cert {path}: not a PEM CA certificate ({getattr(exc, 'reason', None) or exc})") from None
    if not context.get_ca_certs():
        raise UsageError(f"--ca-cert {path}: holds no CA certificate (a PEM file with -----BEGIN CERTIFICATE-----)")
    return ca.resolve()


def client_context(ca_file: str | os.PathLike[str]) -> ssl.SSLContext:
    """A client context that trusts only `ca_file` and checks the host name (TLS 1.2 or newer)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def pika_parameters(amqp_url: str, ca_file: str | os.PathLike[str] | None, connection_name: str | None = None) -> Any:
    """pika connection parameters for a harness client (the probe, the tracer) of `amqp_url`.

    pika's own `amqps://` default trusts the system's CAs; a run trusts its CA only.
    """
    import pika

    params = pika.URLParameters(amqp_url)
    if ca_file is not None:
        params.ssl_options = pika.SSLOptions(client_context(ca_file), server_hostname=params.host)
    if connection_name:
        params.client_properties = {"connection_name": connection_name}
    return params


def connect_error(exc: BaseException) -> str:
    """The cause of a failed connection, TLS errors first: pika nests the SSL error two levels deep."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            detail = getattr(current, "verify_message", None) or getattr(current, "reason", None) or str(current)
            return f"TLS: {type(current).__name__}: {detail}"
        todo.extend(a for a in getattr(current, "args", ()) if isinstance(a, BaseException))
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(e for e in getattr(current, "exceptions", ()) or () if isinstance(e, BaseException))
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def rabbitmq_tls_config(port: int, ca: str, cert: str, key: str) -> str:
    """The rabbitmq.conf lines of a server-only TLS listener on loopback."""
    return (
        f"listeners.ssl.default = 127.0.0.1:{port}\n"
        f"ssl_options.cacertfile = {ca}\n"
        f"ssl_options.certfile = {cert}\n"
        f"ssl_options.keyfile = {key}\n"
        "ssl_options.verify = verify_none\n"
        "ssl_options.fail_if_no_peer_cert = false\n"
    )
