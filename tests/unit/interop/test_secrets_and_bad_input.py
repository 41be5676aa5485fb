"""Issue 20: the doors an unlucky CI or a hostile peer still opened, each reproduced (the pure
parts; the parts that need a broker or real processes are in tests/broker/test_signals_locks_and_secrets.py).

Secrets in every shape of URL, in argparse's errors, in a child's environment; bad input
refused before anything starts (command lines, manifests, scenario values); the results
folder's lock and whole files; a peer's log capped and redacted; deeply nested JSON.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acemq_interop.commands.cli import main, said
from acemq_interop.core import redact
from acemq_interop.core.errors import UsageError
from acemq_interop.peers.manifests import load_manifest
from acemq_interop.peers.process import _CappedLog, json_depth
from acemq_interop.results.outdir import OutFolder, write_whole
from acemq_interop.spec import strict_yaml
from acemq_interop.spec.assertions import bounded_search, regex_problem

ROOT = Path(__file__).resolve().parents[3]
PW = "S3cretPW"
# The 14 forms the issue tried: 6 of them printed the password.
FORMS = [f"amqp://user:{PW}@host:5672/", f"amqp:/user:{PW}@host:5672/", f"user:{PW}@host:5672", f"amqp//user:{PW}@host:5672/",
         f"amqp:///user:{PW}@host:5672/", "amqp://user:S3cret PW@host:5672/", f"amqp://user:{PW}@[::1:5672/",
         f"amqp://user:{PW}@host:99999/", f"http://user:{PW}@host:5672/", f"amqp://user:{PW}@/", f"amqp:user:{PW}@host",
         f"//user:{PW}@host:5672", f"amqp://user:{PW}@host:abc/", f"amqps://user:{PW}@host/"]


def _no_secret(text: str) -> bool:
    return "S3cret" not in text and "PW@" not in text


@pytest.mark.parametrize("form", FORMS)
def test_every_shape_of_url_is_shown_without_its_password(form: str) -> None:
    assert _no_secret(redact.url(form)), redact.url(form)
    assert _no_secret(" ".join(redact.argv(["run", "--broker", form]))), redact.argv(["--broker", form])
    assert _no_secret(" ".join(redact.argv([f"--broker={form}"])))
    assert redact.password_of(form) is not None
    assert redact.has_secret(form)


def test_text_hides_userinfo_in_any_shape_and_leaves_the_rest() -> None:
    said = redact.text(f"could not reach user:{PW}@host:5672 nor amqp:/u:{PW}@h (RR-4.2: a@b at 10:00)")
    assert PW not in said and "RR-4.2: a@b at 10:00" in said
    assert redact.url("amqp://USER:PASS@HOST[:PORT]/") == "amqp://USER:PASS@HOST[:PORT]/"


# Refused before anything is reached (the two well-formed ones would go on to look `host` up).
MALFORMED = [f for f in FORMS if f not in (f"amqp://user:{PW}@host:5672/", "amqp://user:S3cret PW@host:5672/")]


@pytest.mark.parametrize("form", MALFORMED)
@pytest.mark.parametrize("how", ["arg", "env", "doctor"])
def test_a_malformed_broker_url_never_prints_its_password(form: str, how: str, tmp_path: Path, capsys,
                                                          monkeypatch) -> None:
    """In-process (the CLI's own code path): exit 2, and no byte of the password on the
    console or in anything written to --out."""
    out = tmp_path / "out"
    if how == "doctor":
        code = main(["doctor", "--broker", form])
    else:
        argv = ["run", "--peers", "python", "--scenarios", "rr-pair-round-trip", "--out", str(out), "--no-build"]
        if how == "env":
            monkeypatch.setenv(redact.BROKER_ENV, form)
        else:
            argv += ["--broker", form]
        code = main(argv)
    seen = capsys.readouterr()
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()) if out.exists() else ""
    assert _no_secret(seen.out + seen.err + written), (seen.out + seen.err)[-2000:]
    assert code == 2, seen.err  # doctor too: refused before any check runs


def test_the_broker_variable_and_credentials_leave_the_environment_of_every_child(monkeypatch) -> None:
    monkeypatch.setenv(redact.BROKER_ENV, f"amqp://u:{PW}@h/")
    monkeypatch.setenv("SOME_URL", f"http://admin:{PW}@example/")
    monkeypatch.setenv("HARMLESS", "value")
    env = redact.child_environ({"PEER_SETTING": "1"})
    assert redact.BROKER_ENV not in env and "SOME_URL" not in env
    assert env["HARMLESS"] == "value" and env["PEER_SETTING"] == "1"
    from acemq_interop.peers.manifests import discover

    assert redact.BROKER_ENV not in discover()["python"].environment()


def test_the_cli_takes_the_broker_variable_out_of_its_environment_before_parsing() -> None:
    """A child of the CLI (here: the process the CLI runs for `doctor`'s checks would be one)
    never sees it; the CLI still uses it as --broker's default."""
    code = ("import os, sys\n"
            "from acemq_interop.core import redact\n"
            "redact.remember_arguments(sys.argv[1:]); redact.take_broker_env()\n"
            "print(redact.BROKER_ENV in os.environ, redact.broker_env())\n")
    env = {**os.environ, redact.BROKER_ENV: f"amqp://u:{PW}@h:5672/"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split()[0] == "False" and PW in done.stdout


@pytest.mark.parametrize("argv, says", [
    (["run", "--peers", "python", "--management-url", f"http://user:{PW}@h:15672"], "without a user or password"),
    (["run", "--peers", "python", "--management-url", "127.0.0.1:15672"], "not an http(s) URL"),
    (["run", "--peers", "python", "--shard", "1/99999999999999999999"], "N is at most 1000"),
    (["run", "--peers", "python", "--op-timeout", "inf"], "--op-timeout inf: must be more than 0"),
    (["run", "--peers", "python", "--op-timeout", "nan"], "--op-timeout nan: must be more than 0"),
])
def test_bad_command_lines_exit_2_with_one_line_before_anything_starts(argv: list[str], says: str, tmp_path: Path,
                                                                       capsys) -> None:
    started = time.monotonic()
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert says in err and PW not in err, err
    assert time.monotonic() - started < 30, "refused at once (no N lists built, no broker)"


def test_out_on_a_file_or_under_one_is_refused_before_anything_starts(tmp_path: Path, capsys) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", "--peers", "python", "--out", str(afile)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["run", "--peers", "python", "--out", str(afile / "sub")]) == 2
    assert "is a file, so there can be no folder under it" in capsys.readouterr().err


def test_a_120_kb_argument_is_not_echoed_whole(tmp_path: Path, capsys) -> None:
    huge = "x" * 120_000
    assert main(["run", "--peers", huge, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err) < 5000 and "characters)" in err and "unknown peer" in err, err[:500]
    with pytest.raises(SystemExit) as exited:
        main(["run", "--concurrency", "7" * 120_000])
    assert exited.value.code == 2
    assert len(capsys.readouterr().err) < 5000
    assert len(said("y" * 1_000_000)) < 5000


def test_out_is_locked_by_its_run_and_cleared_only_by_its_owner(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = OutFolder.claim(out)
    (out / "results.json").write_text("{}")
    code = ("import sys; from pathlib import Path; from acemq_interop.results.outdir import OutFolder\n"
            "from acemq_interop.core.errors import UsageError\n"
            "try:\n    OutFolder.claim(Path(sys.argv[1]))\nexcept UsageError as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=60)
    assert "is in use by another run" in done.stdout and f"pid {os.getpid()}" in done.stdout, done.stdout + done.stderr
    assert (out / "results.json").exists(), "a second run never clears a folder it does not own"
    first.clear(["results.json"])
    assert not (out / "results.json").exists()
    first.release()
    OutFolder.claim(out).release()  # free again


def test_a_folder_whose_run_was_killed_is_free_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path;"
                               "from acemq_interop.results.outdir import OutFolder; OutFolder.claim(Path(sys.argv[1]));"
                               "print('held', flush=True); time.sleep(60)", str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UsageError):
            OutFolder.claim(out)
    finally:
        holder.kill()
        holder.wait()
    OutFolder.claim(out).release()


def test_a_file_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")

    def broken(path: Path) -> None:
        path.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_whole(target, broken)
    assert target.read_text() == "old" and not list(tmp_path.glob(".*partial"))
    write_whole(target, lambda p: p.write_text("new"))
    assert target.read_text() == "new"


def test_a_peer_log_keeps_its_last_bytes_with_a_marker_and_no_password(tmp_path: Path) -> None:
    redact.remember("peer-log-secret-991")
    log = _CappedLog(tmp_path / "peer.log", 64 * 1024)
    for i in range(20_000):
        log.write(f"line {i} connecting to amqp://guest:guest@127.0.0.1:5672/x with peer-log-secret-991\n")
    log.close()
    text = (tmp_path / "peer.log").read_text()
    assert len(text.encode()) <= 64 * 1024
    assert text.startswith("[acemq-interop: ") and "earlier bytes of this peer's stderr dropped" in text
    assert "line 19999 " in text and "guest:guest@" not in text and "peer-log-secret-991" not in text


def test_nesting_is_measured_without_parsing() -> None:
    assert json_depth(b'{"a": [1, {"b": "[[[[["}]}') == 3
    assert json_depth(b"[" * 5000 + b"]" * 5000) == 5000


MANIFEST = "name: bad\nlanguage: X\nrun: [sh, peer.sh]\n"


@pytest.mark.parametrize("text, says", [
    ("env: [A, B]", "env"),
    ("requires: 5", "requires"),
    ("docker: [1, 2]", "docker"),
    ("layout: 3", "layout"),
    ("toolchain: 7", "toolchain"),
    ("toolchain:\n  - {name: x, version: '(ab'}", "is not a regular expression"),
    ("name: again", "duplicate key 'name'"),
    ("description: &a [x, x]\nlanguage2: *a", "aliases"),
    ("nested: " + "[" * 5000 + "]" * 5000, "nested more than"),
    ("unknown_key: 1", "unknown_key"),
    ("env: {A: true}", "env"),
])
def test_a_malformed_manifest_is_one_line_with_its_file_and_line(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "peer.yaml"
    path.write_text(MANIFEST + text + "\n")
    with pytest.raises(UsageError) as refused:
        load_manifest(path)
    message = str(refused.value)
    assert message.startswith(f"{path}:") and says in message and "\n" not in message and len(message) < 600, message


def test_a_manifest_that_is_not_utf8_or_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "peer.yaml"
    path.write_bytes(MANIFEST.encode() + b"description: caf\xe9\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_manifest(path)
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, "
                                                      f"*{chr(97 + i)}, *{chr(97 + i)}]" for i in range(9)]
    path.write_text(MANIFEST + "\n".join(bomb) + "\n")
    started = time.monotonic()
    with pytest.raises(UsageError, match="aliases"):
        load_manifest(path)
    assert time.monotonic() - started < 5


def test_the_suite_s_and_the_fixtures_manifests_still_load() -> None:
    from acemq_interop.peers.manifests import discover

    found = discover(extra=[ROOT / "tests/fixtures/peers", ROOT / "foreign/tutorial/peer",
                            ROOT / "tests/fixtures/foreign/eventbus-node/peer"])
    assert {"python", "go", "java", "node", "dotnet", "ruby", "broken-crash", "tutorialpy"} <= set(found)


@pytest.mark.parametrize("text, value", [
    ("a: 010000", 10000), ("a: 1:30", "1:30"), ("a: 0o17", 15), ("a: 0x1f", 31), ("a: yes", "yes"), ("a: off", "off"),
    ("a: 1_000", "1_000"), ("a: 0b101", "0b101"), ("a: -3", -3), ("a: 1.5", 1.5), ("a: ~", None), ("a: True", True),
])
def test_values_are_read_by_yaml_1_2_core(tmp_path: Path, text: str, value: object) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text + "\n")
    assert strict_yaml.read(path)[0] == {"a": value}


SCENARIO = (ROOT / "scenarios/request-reply/rr-pair-round-trip.yaml").read_text()


def _refusal(tmp_path: Path, text: str) -> str:
    from acemq_interop.spec.scenarios import load_file

    path = tmp_path / "rr-pair-round-trip.yaml"
    path.write_text(text)
    with pytest.raises(UsageError) as refused:
        load_file(path)
    return str(refused.value)


def test_an_octal_looking_timeout_is_ten_thousand_and_a_sexagesimal_one_refused(tmp_path: Path) -> None:
    from acemq_interop.spec.scenarios import load_file

    assert "timeout_ms:" in SCENARIO
    path = tmp_path / "rr-pair-round-trip.yaml"
    import re

    path.write_text(re.sub(r"timeout_ms: \d+", "timeout_ms: 010000", SCENARIO, count=1))
    steps = load_file(path).steps
    assert 10000 in [s.args.get("timeout_ms") for s in steps if isinstance(s.args, dict)]
    message = _refusal(tmp_path, re.sub(r"timeout_ms: \d+", "timeout_ms: 1:30", SCENARIO, count=1))
    assert "'1:30' is not of type 'integer'" in message, message


def test_a_typo_in_a_check_path_is_refused_at_load(tmp_path: Path) -> None:
    assert "that: call.outcome" in SCENARIO
    message = _refusal(tmp_path, SCENARIO.replace("that: call.outcome", "that: call.outcom", 1))
    assert "not 'outcom'" in message and message.startswith(str(tmp_path)), message


def test_a_300_character_queue_name_is_refused_at_load(tmp_path: Path) -> None:
    assert "queue: requests" in SCENARIO
    message = _refusal(tmp_path, SCENARIO.replace("queue: requests", "queue: " + "q" * 300))
    assert "a name of 300 bytes" in message, message


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)*b", "(x)\\1", ".*.*x", "a{0,50}a{0,50}.*x", "(?<=a+)b", "(ab"])
def test_a_catastrophic_regex_is_refused_at_load(tmp_path: Path, pattern: str) -> None:
    import re

    match = re.search(r"- \{that: (\S+), equals: reply", SCENARIO)
    assert match, "the scenario checks an outcome"
    text = SCENARIO.replace(match.group(0), f"- {{that: {match.group(1)}, matches: '{pattern}'", 1)
    message = _refusal(tmp_path, text)
    assert "matches:" in message, message
    assert regex_problem(pattern)


def test_matching_is_bounded_at_run_time() -> None:
    started = time.monotonic()
    assert bounded_search("(a+)+$", "a" * 40 + "!")[0] is False  # refused: never run
    assert bounded_search(".*x", "a" * 100_000)[0] is False  # too long: never run
    assert bounded_search("^amq\\.gen-", "amq.gen-abc")[0] is True
    assert time.monotonic() - started < 2


def test_the_early_signal_handler_records_instead_of_dying() -> None:
    """The entry point's first statement: a SIGTERM while the modules load is recorded (the
    run then says it was interrupted) instead of killing the process where it stands."""
    code = ("import os, signal, time\n"
            "from acemq_interop.core import signals\n"
            "signals.install()\n"
            "os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.2)\n"
            "print('alive', signals.pending())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "alive True", done.stdout + done.stderr


def test_an_armed_handler_raises_once_and_records_the_rest() -> None:
    code = ("import os, signal, time\n"
            "from acemq_interop.core import signals\n"
            "signals.install(); signals.arm(); raised = 0\n"
            "for _ in range(30):\n"
            "    try:\n"
            "        os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.01)\n"
            "    except KeyboardInterrupt:\n"
            "        raised += 1\n"
            "print(raised, signals.pending(), signals.again())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["1", "True", "True"], done.stdout + done.stderr
