"""A rerun line repeats every flag that shaped the run, read off the parser's marks."""
from __future__ import annotations

import argparse

from acemq_interop.commands.cli import build_parser
from acemq_interop.commands.run import rerun_flags


def _run_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def flags(*argv: str) -> list[str]:
    args = build_parser().parse_args(["run", *argv])
    return list(rerun_flags(args.parser, args))


def test_every_flag_that_shapes_a_cell_is_repeated() -> None:
    got = flags("--management-url", "http://h:15673", "--in-docker", "--known-failures", "extra.yaml",
                "--op-timeout", "7.5", "--peer-dir", "../mine", "--cpu-hog", "2")
    assert got == ["--management-url", "http://h:15673", "--known-failures", "extra.yaml", "--op-timeout", "7.5",
                   "--in-docker", "--peer-dir", "../mine", "--cpu-hog", "2"]
    assert flags("--no-known-failures") == ["--no-known-failures"]


def test_defaults_and_flags_that_do_not_shape_a_cell_are_not_repeated() -> None:
    assert flags("--concurrency", "3", "--out", "x", "-q", "--transcripts", "all") == []


def test_the_marks_are_on_the_parser_not_in_a_list_beside_it() -> None:
    marked = {a.dest for a in _run_parser()._actions if getattr(a, "rerun", False)}
    assert marked == {"management_url", "tls", "ca_cert", "known_failures", "no_known_failures", "op_timeout",
                      "in_docker", "peer_dir", "cpu_hog", "scenario_dir", "foreign"}
