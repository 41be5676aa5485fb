"""Scenario files are checked before anything runs: path, line and what is wrong, in one bounded line."""
from __future__ import annotations

from pathlib import Path

import pytest

from acemq_interop.core.errors import UsageError
from acemq_interop.spec.scenarios import load_all, load_file

GOOD = """\
id: demo-round-trip
title: A demo round trip for the loader
rules: [RR-8]
roles: {requester: peer, responder: peer}
procedure: One request, one echo reply.
steps:
  - responder: {as: r, role: responder, queue: requests}
  - requester: {as: q, role: requester}
  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}
  - expect:
      - {that: call.outcome, equals: reply, rule: RR-8.1}
"""


def write(tmp_path: Path, text: str | bytes, suffix: str = ".yaml") -> Path:
    path = tmp_path / f"demo-round-trip{suffix}"  # a file is named after its id
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(UsageError) as raised:
        load_file(path)
    message = str(raised.value)
    assert "\n" not in message and len(message) <= len(str(path)) + 320, message
    return message


def test_every_scenario_in_the_repo_loads() -> None:
    loaded = load_all()
    assert len(loaded) >= 30
    assert len({s.id for s in loaded}) == len(loaded)


def test_a_good_file_loads_with_the_capabilities_its_roles_need(tmp_path: Path) -> None:
    scenario = load_file(write(tmp_path, GOOD))
    assert scenario.needs == {"requester": {"request"}, "responder": {"respond"}}
    assert scenario.matrix == "pairs"


@pytest.mark.parametrize(
    "change, line, words",
    [
        (("timeout_ms: 1000", "timeout_ms: soon"), 9, "is not of type 'integer'"),
        (("rules: [RR-8]", "rules: [RR-99]"), 3, "RR-99 is not in docs/wire-spec.md"),
        (("role: responder, queue", "role: waiter, queue"), 7, "role 'waiter' is not declared"),
        (("{that: call.outcome", "{that: kall.outcome"), 11, "'kall' is not named by an earlier step"),
        (("rule: RR-8.1}", "rule: RR-3.1}"), 11, "a check asserts RR-3.1, whose rule RR-3 is not in this scenario's rules"),
        (("rule: RR-8.1}", "rule: RR-8}"), 11, "rule: RR-8 names a rule; a check names the clause it asserts: one of RR-8.1, RR-8.2, RR-8.3"),
        (("rule: RR-8.1}", "rule: RR-8.9}"), 11, "rule: RR-8.9 is not a clause of catalogue/catalogue.yaml (RR-8 has RR-8.1, RR-8.2, RR-8.3, RR-8.4)"),
        (("rules: [RR-8]", "rules: [RR-8, RR-4]"), 3, "rule RR-4 is listed but no check asserts a clause of it"),
        (("rule: RR-8.1}", "rule: RR-8.1, consequence_of: RR-8.1}"), 11, "consequence_of: RR-8.1 is the clause this check asserts"),
        (("rule: RR-8.1}", "rule: RR-8.1, consequence_of: RR-8}"), 11, "consequence_of: RR-8 names a rule"),
        (("  - expect:", "  - expectt:"), 10, "expectt"),
        (("roles: {requester: peer", "roles: {requester: robot"), 4, "'robot' is not one of"),
        # YAML that PyYAML takes silently: the second `steps:` would replace the first
        (("steps:\n", "steps:\n  - queue: {name: x}\nsteps:\n"), 8, "duplicate key 'steps' (first on line 6)"),
        (("{as: r, role", "{as: r, as: s, role"), 7, "duplicate key 'as'"),
        (("body: {n: 1}", "body: {n: 2024-01-01}"), 9, "reads as a date: quote it"),
        (("body: {n: 1}", "body: {true: 1}"), 9, "a key must be text, this one reads as bool"),
        (("body: {n: 1}", "body: {1: 1}"), 9, "a key must be text, this one reads as int"),
        (("  - requester:", "\t- requester:"), 8, "not valid YAML: found character '\\t'"),
        (("body: {n: 1}", "body: " + "[" * 1000 + "]" * 1000), 9, "nested more than 64 levels deep"),
        (("  - expect:", "  - probe_publish: {queue: requests, body: &a [x]}\n  - probe_publish: {queue: requests, body: *a}\n"
                         "  - expect:"), 11, "YAML aliases (*name) are not allowed"),
        # roles: text keys naming roles that steps play
        (("responder: peer}", "responder: peer, 3: peer}"), 4, "a key must be text, this one reads as int 3"),
        (("responder: peer}", "responder: peer, observer: peer}"), 4, "role 'observer' is played by no step"),
        (("requester: peer,", "requester: all-peers,"), 8, "a requester step's role is peer"),
        # names: bound before use, used as what they are, once
        (("requester: q, queue", "requester: r, queue"), 9, "'r' names a responder step; requester takes a requester"),
        (("{as: q, role", "{as: r, role"), 8, "'r' is already named by an earlier step"),
        (("body: {n: 1}", 'body: {n: "${nobody.name}"}'), 9, "'${nobody.name}': 'nobody' is not named by an earlier step"),
        (("body: {n: 1}", 'body: {n: "${q.reply_queu}"}'), 9, "a requester step names {name, reply_queue}, not 'reply_queu'"),
        (("body: {n: 1}", 'body: {n: "${q.name"}'), 9, "a ${ without its }"),
        (("queue: requests}", 'queue: requests, bind: {exchange: "${ns}"}}'), 7, "${...} is not expanded in bind"),
        (("timeout_ms: 1000}", "timeout_ms: 1000, async: true}"), 11, "'call' is an async call not awaited yet"),
        (("  - expect:", "  - await: call\n  - expect:"), 10, "'call' is not waiting"),
        (("{as: call,", "{as: ns,"), 9, "'ns' is a built-in name"),
        # values the schema took and the engine or a peer would crash on
        (("equals: reply", 'matches: "(ab"'), 11, "is not a regular expression"),
        (("timeout_ms: 1000", 'timeout_ms: "1000"'), 9, "'1000' is not of type 'integer'"),
        (("equals: reply", 'length: "3"'), 11, "length: an integer of at least 0, or one ${...}"),
        (("queue: requests, body", "queue: requests, exchange: x, body"), 9, "give queue, or exchange+routing_key, not both"),
        (("queue: requests, body", "body"), 9, "say where it goes"),
        (("  - expect:", "  - probe_publish: {queue: requests, headers: {x: 0.5}}\n  - expect:"), 10, "a header value is text"),
        (("  - expect:", "  - probe_publish: {queue: requests, headers: {x: {long: abc}}}\n  - expect:"), 10, "a header value is text"),
        (("id: demo-round-trip", "id: demo-other"), 1, "id 'demo-other' is not the file's name"),
    ],
)
def test_a_bad_file_names_its_path_line_and_problem(tmp_path: Path, change: tuple[str, str], line: int, words: str) -> None:
    assert change[0] in GOOD, change
    path = write(tmp_path, GOOD.replace(*change))
    message = refusal(path)
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_broken_yaml_gives_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("rules: [RR-8]", "rules: [RR-8"))
    with pytest.raises(UsageError, match=rf"{path}:\d+: not valid YAML"):
        load_file(path)


def test_a_mutant_claimed_must_break_a_clause_the_scenario_asserts(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("roles:", "catches: [native-first]\nroles:"))
    with pytest.raises(UsageError, match=r"demo-round-trip.yaml:4: mutant 'native-first' breaks RR-3.1, which no check of this scenario asserts"):
        load_file(path)
    # The rule alone is not enough: timeouts-not-counted breaks RR-9.2, and the check asserts RR-9.1.
    text = GOOD.replace("rules: [RR-8]", "rules: [RR-9]").replace("rule: RR-8.1", "rule: RR-9.1")
    path = write(tmp_path, text.replace("roles:", "catches: [timeouts-not-counted]\nroles:"))
    with pytest.raises(UsageError, match=r"breaks RR-9.2, which no check of this scenario asserts \(it asserts RR-9.1\)"):
        load_file(path)


def test_the_clauses_come_from_the_checks_including_consequences(tmp_path: Path) -> None:
    text = GOOD.replace("rules: [RR-8]", "rules: [RR-8, RR-9, RR-2]").replace("rule: RR-8.1}", """rule: RR-8.1}
      - {that: call.outcome, equals: reply, rule: RR-9.1, consequence_of: RR-2.2}
  - wait_event: {of: q, event: unmatched, rule: RR-8.2}""")
    scenario = load_file(write(tmp_path, text))
    assert scenario.clauses == ("RR-8.1", "RR-9.1", "RR-2.2", "RR-8.2")
    assert scenario.rules == ("RR-8", "RR-9", "RR-2")


def test_a_step_that_checks_must_name_its_clause(tmp_path: Path) -> None:
    """There is no default clause: a check without one is refused (it used to FAIL as RR-1)."""
    path = write(tmp_path, GOOD + "  - probe_get: {as: none, queue: requests, absent: true, timeout_ms: 0}\n")
    with pytest.raises(UsageError, match=r"demo-round-trip.yaml:12: \w+ with absent is a check: give it `rule:`"):
        load_file(path)
    path = write(tmp_path, GOOD + "  - wait_counters: {as: k, of: q, until: {timed_out: 0}}\n")
    with pytest.raises(UsageError, match=r"demo-round-trip.yaml:12: .*'rule' is a required property"):
        load_file(path)


def test_one_way_to_poll_counters_and_rules_derived_from_the_checks(tmp_path: Path) -> None:
    """`counters` reads once; waiting for values is `wait_counters`. A file without `rules:`
    has the rules of its checks' clauses."""
    with pytest.raises(UsageError, match=r"'until' was unexpected"):
        load_file(write(tmp_path, GOOD + "  - counters: {as: k, of: q, until: {timed_out: 0}}\n"))
    scenario = load_file(write(tmp_path, GOOD.replace("rules: [RR-8]\n", "")))
    assert scenario.rules == ("RR-8",)


def test_every_scenario_lists_exactly_the_rules_it_asserts_and_catches_only_what_it_asserts() -> None:
    from acemq_interop.spec.catalogue import mutants, rule_of

    for scenario in load_all():
        assert set(scenario.rules) == {rule_of(c) for c in scenario.clauses}, scenario.id
        for name in scenario.catches:
            assert mutants()[name].clause in scenario.clauses, (scenario.id, name)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "demo-round-trip.yaml").write_text(GOOD)
    with pytest.raises(UsageError, match="id 'demo-round-trip' is also used by"):
        load_all(tmp_path)


def test_yml_files_are_read_too_and_named_after_their_id(tmp_path: Path) -> None:
    write(tmp_path, GOOD, suffix=".yml")
    assert [s.id for s in load_all(tmp_path)] == ["demo-round-trip"]
    write(tmp_path, GOOD, suffix=".yaml")
    with pytest.raises(UsageError, match="id 'demo-round-trip' is also used by"):
        load_all(tmp_path)
    (tmp_path / "demo-round-trip.yaml").unlink()
    (tmp_path / "demo-round-trip.yml").rename(tmp_path / "other.yml")
    assert refusal(tmp_path / "other.yml").startswith(f"{tmp_path / 'other.yml'}:1: id 'demo-round-trip' is not the file's name")


def test_invalid_utf8_gives_the_line_and_the_byte_offset(tmp_path: Path) -> None:
    raw = GOOD.encode().replace(b"queue: requests}", b"queue: requ\xc3\x28ests}")
    path = write(tmp_path, raw)
    offset = raw.index(b"\xc3")
    assert refusal(path) == f"{path}:7: not UTF-8: byte 0xc3 at offset {offset}; save the file as UTF-8"


def test_a_control_character_gives_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("One request", "One\x07 request"))
    assert refusal(path).startswith(f"{path}:5: not valid YAML: character U+0007 is not allowed")


def test_an_alias_bomb_gives_one_short_message(tmp_path: Path) -> None:
    bomb = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
    path = write(tmp_path, GOOD + "x0: &l0 [lol]\n" + bomb)
    assert "YAML aliases (*name) are not allowed" in refusal(path)


def test_a_huge_wrong_value_is_quoted_short(tmp_path: Path) -> None:
    title = "title: [" + ", ".join(["aaaaaaaa"] * 20000) + "]"
    path = write(tmp_path, GOOD.replace("title: A demo round trip for the loader", title))
    assert refusal(path).startswith(f"{path}:2: title: ['aaaaaaaa', ")


def test_a_file_that_is_not_a_scenario_mapping(tmp_path: Path) -> None:
    for text in ("", "- a list\n", "just text\n", "a: 1\n---\nb: 2\n"):
        assert refusal(write(tmp_path, text)).startswith(f"{path_of(tmp_path)}:")


def path_of(tmp_path: Path) -> Path:
    return tmp_path / "demo-round-trip.yaml"


def test_known_failure_files_are_read_as_strictly(tmp_path: Path) -> None:
    from acemq_interop.spec import known_failures

    entry = '  - {cell: "x[requester=a]", reason: old}\n'
    (tmp_path / "a.yml").write_text("known_failures:\n" + entry)
    assert [k.pattern for k in known_failures.load([tmp_path])] == ["x[requester=a]"]
    (tmp_path / "b.yaml").write_text("known_failures:\n" + entry + "known_failures: []\n")
    with pytest.raises(UsageError, match=r"b\.yaml:3: duplicate key 'known_failures'"):
        known_failures.load([tmp_path])
    (tmp_path / "b.yaml").write_text("known_failures:\n" + entry + '  - {cell: "y", reson: typo}\n')
    with pytest.raises(UsageError, match=r"b\.yaml:3: known_failures\[1\] needs 'cell'"):
        known_failures.load([tmp_path])


@pytest.mark.parametrize("content", [
    b"id: bad\ntitle: x\x80y\n",
    b"id: bad\nsteps: " + b"[" * 1000 + b"]" * 1000 + b"\n",
    b"a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + b"".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n".encode() for i in range(1, 12)),
])
def test_the_cli_says_one_line_and_exits_2_for_a_bad_file(tmp_path: Path, content: bytes) -> None:
    """The issue's tracebacks (invalid UTF-8, 1000 deep) and the alias bomb's 7 MB of stderr, end to end."""
    import os
    import shutil
    import subprocess
    import sys

    from acemq_interop.core.paths import DATA_ROOT

    for folder in ("scenarios", "catalogue", "known-failures", "docs"):
        shutil.copytree(DATA_ROOT / folder, tmp_path / folder)
    (tmp_path / "peers").mkdir()
    (tmp_path / "scenarios" / "bad.yml").write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "acemq_interop", "list"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ACEMQ_INTEROP_HOME": str(tmp_path)}, cwd=DATA_ROOT)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"acemq-interop: {tmp_path / 'scenarios' / 'bad.yml'}:"), done.stderr[-2000:]
    assert len(lines[0]) < 500


def test_a_mutant_claimed_must_live_on_an_object_the_scenario_opens(tmp_path: Path) -> None:
    """late-reply-to-next lives on a requester: a scenario whose peer only runs a responder
    would run the clean binding in that mutant's cells, so its claim is refused."""
    responder_only = GOOD.replace("roles: {requester: peer, responder: peer}", "roles: {responder: peer}").replace(
        "  - requester: {as: q, role: requester}\n", "").replace(
        "  - request: {as: call, requester: q, queue: requests, body: {n: 1}, timeout_ms: 1000}",
        "  - probe_publish: {queue: requests, body: {n: 1}}").replace(
        "      - {that: call.outcome, equals: reply, rule: RR-8.1}",
        "      - {that: r.name, present: true, rule: RR-8.1, charges: responder}")
    load_file(write(tmp_path, responder_only))
    path = write(tmp_path, responder_only.replace("roles:", "catches: [late-reply-to-next]\nroles:"))
    with pytest.raises(UsageError, match=r"mutant 'late-reply-to-next' lives on a requester, which no step of this scenario opens"):
        load_file(path)


def test_a_bindings_own_scenarios_load_beside_the_suites_and_an_id_clash_is_refused(tmp_path: Path) -> None:
    from acemq_interop.spec.scenarios import load_all

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "demo-round-trip.yaml").write_text(GOOD.replace("rules: [RR-8]\n", ""), encoding="utf-8")
    ids = {s.id for s in load_all(extra=[mine])}
    assert "demo-round-trip" in ids and "rr-pair-round-trip" in ids
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "rr-pair-round-trip.yaml").write_text(GOOD.replace("id: demo-round-trip", "id: rr-pair-round-trip"), encoding="utf-8")
    with pytest.raises(UsageError, match=r"rr-pair-round-trip.yaml:1: id 'rr-pair-round-trip' is also used by .*scenarios/"):
        load_all(extra=[clash])
    with pytest.raises(UsageError, match="--scenario-dir .*nowhere: no such folder"):
        load_all(extra=[tmp_path / "nowhere"])
