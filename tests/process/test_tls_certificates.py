"""TLS without a broker: the run's certificates (real openssl), the CA check, the URL and
flag rules (usage errors before any broker starts, never echoing a password), and the
container arguments that carry the certificates."""
from __future__ import annotations

import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acemq_interop.broker.endpoint import parse_broker_url
from acemq_interop.broker.container import TLS_CONF, TLS_MOUNT, ContainerBroker
from acemq_interop.core.errors import UsageError
from acemq_interop.peers.manifests import discover
from acemq_interop.results.model import BrokerInfo, RunResult
from acemq_interop.amqp.tls import check_ca_file, client_context, connect_error, make_certificates, run_certificates

SECRET = "pw-9f3c1e77b2"


def _openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=True).stdout


def test_the_run_certificates_verify_name_localhost_and_127_0_0_1_and_expire_within_a_day(tmp_path: Path) -> None:
    where = tmp_path / "tls"
    where.mkdir(mode=0o700)
    certs = make_certificates(where)
    assert "OK" in _openssl("verify", "-CAfile", str(certs.ca_file), str(certs.server_cert))
    san = _openssl("x509", "-in", str(certs.server_cert), "-noout", "-ext", "subjectAltName")
    assert "DNS:localhost" in san and "IP Address:127.0.0.1" in san, san
    ends_soon = subprocess.run(["openssl", "x509", "-in", str(certs.server_cert), "-noout", "-checkend", str(2 * 86400)],
                               capture_output=True, text=True)
    assert ends_soon.returncode == 1, "the server certificate must expire within two days (it is made for one run)"
    # Only what is handed out is left: the CA's key is gone, so nothing else can be signed.
    left = sorted(str(p.relative_to(where)) for p in where.rglob("*"))
    assert left == ["ca", "ca/ca.pem", "server", "server/ca.pem", "server/server.key", "server/server.pem"], left
    # Python's own client check: the chain and the names verify against the run's CA.
    context = client_context(certs.ca_file)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED


def test_the_certificate_folder_is_private_and_removed_whatever_happens() -> None:
    seen: list[Path] = []
    with pytest.raises(RuntimeError):
        with run_certificates() as certs:
            seen.append(certs.dir)
            assert certs.dir.stat().st_mode & 0o777 == 0o700
            assert certs.ca_file.is_file()
            raise RuntimeError("the run broke")
    assert seen and not seen[0].exists()


def test_ca_cert_must_exist_and_parse(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        check_ca_file(str(tmp_path / "missing.pem"))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(UsageError, match="not a PEM CA certificate"):
        check_ca_file(str(junk))
    with run_certificates() as certs:
        assert check_ca_file(str(certs.ca_file)) == certs.ca_file.resolve()


def test_amqps_urls_default_to_5671_and_need_the_ca_file() -> None:
    endpoint = parse_broker_url(f"amqps://u:{SECRET}@broker.example/", None, "/ca.pem")
    assert (endpoint.port, endpoint.tls, endpoint.ca_file) == (5671, True, "/ca.pem")
    assert endpoint.amqp_url("v").startswith("amqps://u:")
    assert parse_broker_url("amqp://u:p@h/", None).amqp_url("v").startswith("amqp://")
    with pytest.raises(UsageError) as missing:
        parse_broker_url(f"amqps://u:{SECRET}@broker.example/", None)
    assert "--ca-cert" in str(missing.value) and SECRET not in str(missing.value)
    with pytest.raises(UsageError, match="--ca-cert is for a TLS broker"):
        parse_broker_url("amqp://u:p@h/", None, "/ca.pem")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "acemq_interop", "run", "--peers", "python", "--no-build", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, says", [
    ([f"--broker=amqps://u:{SECRET}@127.0.0.1:1/"], "an amqps broker needs --ca-cert FILE"),
    ([f"--broker=amqps://u:{SECRET}@127.0.0.1:1/", "--ca-cert", "/nonexistent/ca.pem"], "--ca-cert /nonexistent/ca.pem: no such file"),
    (["--ca-cert", __file__], "--ca-cert is the CA of an existing TLS broker"),
    (["--tls", f"--broker=amqp://u:{SECRET}@127.0.0.1:1/"], "for an existing broker give --broker amqps://"),
    ([f"--broker=amqps://u:{SECRET}@127.0.0.1:1/", "--ca-cert", __file__], "not a PEM CA certificate"),
])
def test_tls_flag_mistakes_exit_2_before_any_broker_and_never_echo_the_password(args: list[str], says: str) -> None:
    started = time.monotonic()
    done = _cli(*args)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert says in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_a_tls_broker_container_gets_the_server_files_and_its_listener_mounted(tmp_path: Path) -> None:
    with run_certificates() as certs:
        broker = ContainerBroker("acemq-interop/rabbitmq:4.0", lambda _: None, "20261201-000000-abcdef", 0, tls=certs)
        assert broker.endpoint.tls and broker.endpoint.port == broker.tls_port != broker.amqp_port
        args = broker._tls_args()
        assert args[:2] == ["-v", f"{certs.server_dir}:{TLS_MOUNT}:ro"], args
        conf = Path(args[3].split(":")[0])
        assert args[3] == f"{conf}:{TLS_CONF}:ro"
        text = conf.read_text()
        assert f"listeners.ssl.default = 127.0.0.1:{broker.tls_port}" in text
        assert f"ssl_options.keyfile = {TLS_MOUNT}/server.key" in text


def test_a_peer_container_sees_the_ca_folder_read_only_at_the_same_path() -> None:
    manifest = discover()["python"]
    argv = manifest.docker_run("20261201-000000-abcdef", (Path("/tmp/acemq-interop-tls-x/ca"),))
    assert "/tmp/acemq-interop-tls-x/ca:/tmp/acemq-interop-tls-x/ca:ro" in argv
    assert argv.index("-v") < argv.index(str(manifest.docker["image"]))


def test_results_and_reports_say_the_run_was_over_tls() -> None:
    from acemq_interop.results.files import results_data

    report = RunResult([], {}, [], [BrokerInfo("rabbitmq-3.10.8", "RabbitMQ", "3.10.8", "25", tls=True)], 1.0, "now")
    assert report.tls and report.broker == "rabbitmq-3.10.8 over TLS"
    assert "over TLS" in report.brokers[0].description
    data = results_data(report)
    assert data["tls"] is True and data["brokers"][0]["tls"] is True
    plain = RunResult([], {}, [], [BrokerInfo("rabbitmq-3.10.8")], 1.0, "now")
    assert not plain.tls and plain.broker == "rabbitmq-3.10.8"


def test_a_tls_failure_is_named_through_pikas_wrapping() -> None:
    inner = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")

    class Wrapper(Exception):
        pass

    assert connect_error(Wrapper(Wrapper(inner))).startswith("TLS: SSLCertVerificationError")
    assert connect_error(ConnectionRefusedError(111, "Connection refused")) == "ConnectionRefusedError: [Errno 111] Connection refused"
