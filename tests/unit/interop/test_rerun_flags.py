"""A rerun line repeats every flag that shaped the run (issue 9, item 10)."""
from __future__ import annotations

from acemq_interop.commands.cli import _rerun_flags, build_parser


def flags(*argv: str) -> list[str]:
    return _rerun_flags(build_parser().parse_args(["run", *argv]))


def test_every_flag_that_shapes_a_cell_is_repeated() -> None:
    got = flags("--management-url", "http://h:15673", "--in-docker", "--known-failures", "extra.yaml",
                "--op-timeout", "7.5", "--peer-dir", "../mine")
    assert got == ["--peer-dir", "../mine", "--management-url", "http://h:15673", "--in-docker",
                   "--known-failures", "extra.yaml", "--op-timeout", "7.5"]
    assert flags("--no-known-failures") == ["--no-known-failures"]


def test_defaults_and_flags_that_do_not_shape_a_cell_are_not_repeated() -> None:
    assert flags("--concurrency", "3", "--out", "x", "-q", "--transcripts", "all") == []
