"""`acemq-interop doctor`: can each peer build and run here, and if not, how to fix it.

Every check comes from the peer's manifest (`requires:` commands and `toolchain:` entries),
so the harness names no language. A toolchain entry:

    - name: Go 1.19 or newer
      command: [go, version]          # run in the peer's folder; its output is searched
      version: 'go(\\d+\\.\\d+)'        # a regex whose first group is the version found
      min: "1.19"                      # the least version that works
      usual: "go.dev/dl, or actions/setup-go"
      debian: "apt-get install golang-go"
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from .manifests import Manifest

CHECK_BOUND_S = 60


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:4])


def check_broker() -> tuple[str, bool]:
    server = shutil.which("rabbitmq-server") or ("/usr/sbin/rabbitmq-server" if Path("/usr/sbin/rabbitmq-server").exists() else None)
    if server:
        return f"broker: rabbitmq-server found at {server} (the default private node works)", True
    docker = shutil.which("docker")
    hint = " or --broker-image IMAGE (a Docker engine is on PATH)" if docker else ""
    return ("broker: no rabbitmq-server here: install it (Debian: apt-get install rabbitmq-server), "
            f"use --broker amqp://USER:PASS@HOST:5672/{hint}"), False


def check_containment() -> str:
    """Whether a run can end every process its peers start (core/containment.py): never a
    failure of `doctor` (the peers still run), but said, with what it costs."""
    from ..core.containment import subreaper_problem

    problem = subreaper_problem()
    if problem is None:
        return ("containment: the harness adopts the orphans of its peers (Linux child subreaper): a process a peer "
                "starts in a session of its own is ended with the run")
    unwatched = "" if Path("/proc/self").is_dir() else \
        "; no /proc either: the peers' memory, open-files and CPU-share limits are not watched here"
    return (f"containment: the harness cannot adopt the orphans of its peers here ({problem}): a process a peer "
            "starts in a session of its own (setsid, a double fork) may outlive the run; the run names each one "
            f"it finds and could not end{unwatched}")


def check_tool(manifest: Manifest, entry: dict) -> tuple[bool, str]:
    """(ok, what was found or what is wrong)."""
    argv = manifest.argv(tuple(str(a) for a in entry.get("command") or entry.get("check") or []))
    if not argv:
        return False, "manifest entry has no command"
    if shutil.which(argv[0]) is None and not (manifest.cwd / argv[0]).exists():
        return False, f"{argv[0]} not on PATH"
    try:
        done = subprocess.run(argv, cwd=manifest.cwd, env=manifest.environment(),
                              capture_output=True, text=True, timeout=CHECK_BOUND_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{' '.join(argv)} failed: {exc}"
    output = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        return False, f"{' '.join(argv)} exited {done.returncode}: {output.splitlines()[-1] if output else ''}"[:300]
    pattern = entry.get("version")
    if not pattern:
        return True, "present"
    match = re.search(str(pattern), output)
    if not match:
        return False, f"no version in the output of {' '.join(argv)}"
    found = match.group(1) if match.groups() else match.group(0)
    least = entry.get("min")
    if least and _version_tuple(found) < _version_tuple(str(least)):
        return False, f"version {found}, needs {least} or newer"
    return True, f"version {found}"


def check_peer(manifest: Manifest) -> tuple[list[str], bool]:
    """Lines for one peer, and whether it can build and run here."""
    lines: list[str] = []
    ok = True
    missing = manifest.missing_tools()
    if missing:
        ok = False
    checks = [(entry, *check_tool(manifest, entry)) for entry in manifest.toolchain]
    ok = ok and all(good for _, good, _ in checks)
    state = "ready to build and run" if ok else "cannot run here"
    lines.append(f"  {manifest.name:<10} {state} ({manifest.language}; {manifest.folder})")
    for tool in missing:
        lines.append(f"      - {tool}: not on PATH")
    for entry, good, detail in checks:
        mark = "ok " if good else "MISSING"
        lines.append(f"      {mark} {entry.get('name', entry.get('command'))}: {detail}")
        if not good:
            if entry.get("usual"):
                lines.append(f"          with the usual registries: {entry['usual']}")
            if entry.get("debian"):
                lines.append(f"          with Debian's packages: {entry['debian']}")
    return lines, ok
