"""The output folder of a run (`--out`): checked, owned by one run at a time, cleared only by
its owner, and written whole.

Two runs sharing one `--out` would overwrite each other's results and delete each other's
peer logs. So a run claims its folder before it touches anything in it: an exclusive
`flock` on `OUT/.acemq-interop.lock`, which the kernel releases whatever ends the process
(SIGKILL included), with an owner record beside it so a second run can say whose it is. A
second run refuses the folder (a usage error naming the owner), and only the owner clears
the earlier run's files. Each results file is written beside its final name and renamed
over it (`write_whole`), so a reader never sees half a file and a run killed while writing
leaves no partial one.
"""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable, Iterable

from ..core.errors import UsageError
from ..core.ownership import Owner

LOCK_NAME = ".acemq-interop.lock"
PARTIAL = ".partial"


def check_folder(out: Path, flag: str = "--out") -> None:
    """`out` can be a folder: it is one, or it does not exist and no part of its path is a file."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{flag} {out}: is a file, not a folder: give a folder for the results (e.g. {flag} out)")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"{flag} {out}: {parent} is a file, so there can be no folder under it: give another {flag}")
            if not os.access(parent, os.W_OK | os.X_OK) and not out.exists():
                raise UsageError(f"{flag} {out}: {parent} is not writable: give a folder this user can write")
            break


class OutFolder:
    """A run's claim on its output folder (see the module's doc); `release` (or the process's
    end, however it ends) gives it up."""

    def __init__(self, out: Path, handle: int):
        self.out = out
        self._handle: int | None = handle

    @classmethod
    def claim(cls, out: Path, flag: str = "--out") -> "OutFolder":
        check_folder(out, flag)
        try:
            out.mkdir(parents=True, exist_ok=True)
            handle = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise UsageError(f"{flag} {out}: cannot be used ({exc.strerror or exc})") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = Owner.parse(os.pread(handle, 4096, 0).decode("utf-8", "replace").strip())
            os.close(handle)
            who = f" (pid {owner.pid} on {owner.host or 'this machine'})" if owner else ""
            raise UsageError(f"{flag} {out} is in use by another run{who}: wait for it to end, or give this run "
                             f"its own {flag} (two runs in one folder would overwrite each other's results and logs)") from None
        record = (Owner.me().as_json() + "\n").encode()
        os.ftruncate(handle, 0)
        os.pwrite(handle, record, 0)
        return cls(out, handle)

    def clear(self, names: Iterable[str], folders: Iterable[str] = ("logs",)) -> None:
        """The earlier run's files: only the owner of the folder removes them."""
        assert self._handle is not None, "cleared after release"
        for name in folders:
            shutil.rmtree(self.out / name, ignore_errors=True)
        for name in names:
            (self.out / name).unlink(missing_ok=True)
        for partial in self.out.glob(f".*{PARTIAL}"):
            partial.unlink(missing_ok=True)

    def release(self) -> None:
        if self._handle is not None:
            os.close(self._handle)  # the lock goes with it; the file stays (another run may hold it open)
            self._handle = None

    def __enter__(self) -> "OutFolder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def write_whole(path: Path, write: Callable[[Path], None]) -> Path:
    """`write(partial)` beside `path`, then renamed over it: `path` is whole or absent."""
    partial = path.with_name(f".{path.name}{PARTIAL}")
    try:
        write(partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
