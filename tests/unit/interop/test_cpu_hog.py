"""The stress mode's CPU hog (cpu_hog.py): busy while the run lasts, gone after it, bounded."""
from __future__ import annotations

from acemq_interop.run.cpu_hog import cpu_hogs


def test_hogs_run_for_the_block_and_are_gone_after_it():
    lines: list[str] = []
    with cpu_hogs(2, lines.append) as hogs:
        assert len(hogs) == 2 and all(h.poll() is None for h in hogs)
        assert lines and "2 busy process(es)" in lines[0]
    assert all(h.returncode is not None for h in hogs)


def test_a_hog_stops_by_itself_at_its_bound():
    with cpu_hogs(1, lambda _: None, bound_s=0.2) as hogs:
        assert hogs[0].wait(timeout=30) == 0  # ended on its own, before the block killed it


def test_no_hog_for_zero():
    with cpu_hogs(0, lambda _: None) as hogs:
        assert hogs == []
