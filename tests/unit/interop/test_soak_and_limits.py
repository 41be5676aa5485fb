"""Issue 34, the pure parts: the soak's growth rule (results/soak.py), a manifest's `limits:`
(peers/limits.py, its schema), and what the summary says of processes a run could not end."""
from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from acemq_interop.core.errors import UsageError
from acemq_interop.peers.limits import Limits
from acemq_interop.peers.manifests import load_manifest
from acemq_interop.reports.flakes import soak_markdown, soak_text
from acemq_interop.reports.text import containment_lines
from acemq_interop.results.soak import FIGURES, TOLERANCE, WARMUP_RUNS, SoakReport, growth


def flat(**over: float) -> dict[str, float | None]:
    run: dict[str, float | None] = {"rss_mib": 60.0, "fds": 9, "threads": 1, "children": 0, "temp": 0, "shm": 0,
                                    "connections": 0, "vhosts": 0}
    run.update(over)
    return run


def test_flat_runs_grow_nothing() -> None:
    assert growth([flat() for _ in range(30)]) == []


def test_nothing_is_judged_within_the_warm_up() -> None:
    runs = [flat(), flat(fds=40), flat(threads=9)]  # a warm-up may climb: caches, epmd, imports
    assert len(runs) == WARMUP_RUNS and growth(runs) == []
    assert not SoakReport.of(runs).judged and "no growth judged" in SoakReport.of(runs).summary_line()


def test_the_warm_up_s_highest_value_is_the_ceiling() -> None:
    runs = [flat(fds=9), flat(fds=12), flat(fds=10), flat(fds=12), flat(fds=12)]
    assert growth(runs) == []
    grew = growth([*runs, flat(fds=13)])
    assert [(g.figure, g.run, g.value, g.ceiling) for g in grew] == [("fds", 6, 13, 12)]


def test_a_count_may_not_grow_by_one() -> None:
    for name in ("fds", "threads", "children", "temp", "shm", "connections", "vhosts"):
        assert TOLERANCE[name] == (0, 0.0)
        grew = growth([flat(), flat(), flat(), flat(**{name: (flat()[name] or 0) + 1})])
        assert [g.figure for g in grew] == [name]


def test_memory_has_slack_the_larger_of_16_mib_and_a_tenth() -> None:
    small = [flat(rss_mib=60.0)] * 3
    assert growth([*small, flat(rss_mib=76.0)]) == []
    assert [g.figure for g in growth([*small, flat(rss_mib=76.5)])] == ["rss_mib"]
    big = [flat(rss_mib=400.0)] * 3
    assert growth([*big, flat(rss_mib=440.0)]) == []
    assert [g.allowed for g in growth([*big, flat(rss_mib=441.0)])] == [40.0]


def test_a_leak_is_found_in_every_run_past_the_ceiling() -> None:
    runs = [flat(threads=1 + k) if k >= WARMUP_RUNS else flat() for k in range(6)]
    assert [(g.figure, g.run) for g in growth(runs)] == [("threads", 4), ("threads", 5), ("threads", 6)]


def test_an_unknown_figure_is_left_out() -> None:
    runs = [flat(connections=None), flat(connections=None), flat(connections=None), flat(connections=3)]
    assert growth(runs) == []  # no warm-up value: nothing to compare with
    runs = [flat(), flat(), flat(), flat(vhosts=None)]
    assert growth(runs) == []


def test_the_report_shows_every_figure_per_run_and_says_what_grew() -> None:
    runs = [flat(), flat(), flat(), flat(temp=1)]
    soak = SoakReport.of(runs)
    table = soak.table()
    assert table[0] == ["run", *FIGURES.values()] and len(table) == 5 and table[4][FIGURES_INDEX("temp")] == "1"
    assert soak.summary_line().startswith("soak: GROWTH") and "temp grew: 1 in run 4" in soak.summary_line()
    text = soak_text(soak)
    assert "RSS MiB" in text and text.splitlines()[-1] == soak.summary_line()
    markdown = "\n".join(soak_markdown(soak))
    assert "| run | RSS MiB | fds | threads | children | temp | shm | connections | vhosts |" in markdown
    record = json.loads(json.dumps(soak.record()))
    assert record["runs"][3]["temp"] == 1 and record["growth"][0]["figure"] == "temp"
    assert record["warmup_runs"] == WARMUP_RUNS and record["tolerance"]["rss_mib"] == {"absolute": 16.0, "fraction": 0.1}
    assert SoakReport.of([flat()] * 4).summary_line() == "soak: every figure flat after the first 3 runs (4 runs)"
    assert SoakReport.of([flat(vhosts=None)] * 4).table()[1][-1] == "-"


def test_the_report_names_the_connections_a_run_left_open() -> None:
    names = [f"acemq-interop c{k:04d}.requester" for k in range(10)]
    runs = [flat(), flat(), flat(), flat(connections=len(names), connections_left=names)]
    soak = SoakReport.of(runs)
    assert soak.leftovers() == [(4, names)]
    assert soak.leftover_lines() == [f"run 4: 10 connection(s) left open: {', '.join(names[:8])} (and 2 more)"]
    assert soak.leftover_lines()[0] in soak_text(soak) and soak_text(soak).splitlines()[-1] == soak.summary_line()
    assert f"- {soak.leftover_lines()[0]}" in soak_markdown(soak)
    assert json.loads(json.dumps(soak.record()))["runs"][3]["connections_left"] == names
    assert SoakReport.of([flat()] * 4).leftover_lines() == []
    stale = SoakReport.of([flat(), flat(), flat(), flat(stale_connection_rows=["acemq-interop probe c0504 (no state, ...)"])])
    assert stale.grew == [] and stale.leftovers() == []  # the broker's stale row is no connection of the run
    assert stale.leftover_lines() == ["run 4: 1 stale row(s) of closed connections in the broker's statistics (no state, "
                                      "no process holding them; not judged): acemq-interop probe c0504 (no state, ...)"]


def FIGURES_INDEX(name: str) -> int:
    return 1 + list(FIGURES).index(name)


# -- limits ---------------------------------------------------------------------------------


def manifest_with(tmp_path: Path, limits: str | None) -> Path:
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    text = 'name: p\nlanguage: X\nrun: [x]\n' + (f"limits: {limits}\n" if limits is not None else "")
    (folder / "peer.yaml").write_text(text)
    return folder / "peer.yaml"


def test_limits_default_when_a_manifest_says_none(tmp_path: Path) -> None:
    limits = load_manifest(manifest_with(tmp_path, None)).limits
    assert limits == Limits() == Limits(memory_mib=1024, cpu_share=0.5, nice=0, open_files=4096, output_mib=64)


def test_a_manifest_sets_some_limits_and_keeps_the_other_defaults(tmp_path: Path) -> None:
    limits = load_manifest(manifest_with(tmp_path, "{memory_mib: 2048, cpu_share: 1.5, nice: 5}")).limits
    assert limits == Limits(memory_mib=2048, cpu_share=1.5, nice=5)
    assert limits.record() == {"memory_mib": 2048, "cpu_share": 1.5, "nice": 5, "open_files": 4096, "output_mib": 64}


@pytest.mark.parametrize("bad", ["{memory: 10}", "{memory_mib: 8}", "{memory_mib: '512'}", "{cpu_share: 0}",
                                 "{nice: -5}", "{nice: 20}", "{open_files: 10}", "{output_mib: 0}", "[1, 2]"])
def test_a_bad_limit_is_refused_with_its_line(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_manifest(manifest_with(tmp_path, bad))
    assert "peer.yaml:4:" in str(caught.value) and "limits" in str(caught.value), str(caught.value)


def test_a_container_gets_the_memory_and_open_files_limits_from_the_engine(tmp_path: Path) -> None:
    flags = Limits(memory_mib=300, open_files=512).docker_flags()
    assert flags == ["--memory", "300m", "--memory-swap", "300m", "--ulimit", "nofile=512:512"]


def test_the_open_files_limit_is_never_raised_past_the_harness_s_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit here")
    assert Limits(open_files=hard + 1000).open_files_rlimit() == hard
    assert Limits(open_files=min(hard, 4096)).open_files_rlimit() == min(hard, 4096)


# -- the summary ----------------------------------------------------------------------------


def test_the_summary_says_nothing_when_every_process_was_ended() -> None:
    assert containment_lines({"containment": {"subreaper": True, "problem": None, "ended": ["pid 1 (x)"], "left": []}}) == []
    assert containment_lines({}) == []


def test_the_summary_names_what_could_not_be_ended_and_why_orphans_were_not_adopted() -> None:
    lines = containment_lines({"containment": {"subreaper": False, "problem": "not Linux (darwin)", "ended": [],
                                               "left": ["pid 4242 (sleep 600)"]}})
    assert lines[0].startswith("Containment: the harness could not adopt its peers' orphans here (not Linux (darwin))")
    assert lines[1] == "Containment: 1 process(es) the run could not end: pid 4242 (sleep 600)"


# -- what the soak found: the timer meter's samples ------------------------------------------


def test_the_timer_meter_keeps_the_worst_of_each_bucket_not_every_wake_up() -> None:
    import threading
    from collections import deque

    from acemq_interop.run.grace import TimerLag

    class Quiet(TimerLag):  # no thread: the notes are the test's
        def __init__(self) -> None:
            self._buckets, self._lock = deque(), threading.Lock()

    meter = Quiet()
    for at, lag in ((100.00, 0.001), (100.05, 0.2), (100.11, 0.003)):
        meter._note(at, lag)
    assert len(meter._buckets) == 2
    assert meter.worst_since(100.04) == 0.2 and meter.worst_since(100.06) == 0.003 and meter.worst_since(101) == 0.0
    for k in range(100_000):  # 1000 s of wake-ups every 10 ms
        meter._note(200 + k * 0.01, 0.0)
    assert len(meter._buckets) <= TimerLag.WINDOW_S / TimerLag.BUCKET_S + 2, len(meter._buckets)
