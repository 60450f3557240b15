"""Per-execution control groups: a real cap on processes and memory, and a way to kill them all.

rlimits are per process and RLIMIT_NPROC is not enforced for root, so a fork bomb or a process
that detaches with setsid escapes them; a cgroup v1 `pids` group (plus `memory` where writable)
holds every process an execution starts. Where the hierarchy is not writable, `open_cgroups`
returns None with the reason, and the sandbox says what it then cannot bound.
See docs/sandbox.md#control-groups.
"""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import signal
import time
import uuid
from pathlib import Path

from ..processes import signal_process

ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


def own_group(controller: str) -> Path | None:
    """This process's group in the v1 hierarchy of `controller`, if it is mounted."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            group = ROOT / controller / path.lstrip("/")
            return group if (group / "cgroup.procs").is_file() else None
    return None


class Cgroup:
    """One group in each hierarchy we could write (pids always; memory where allowed)."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs

    @property
    def bounds_memory(self) -> bool:
        """Its groups include a memory one (where that hierarchy is writable)."""
        return any((path / "memory.limit_in_bytes").exists() for path in self.dirs)

    def child(self, pids_max: int, memory_bytes: int) -> Cgroup:
        dirs = []
        try:
            for parent in self.dirs:
                path = parent / f"run-{next(_counter)}"
                path.mkdir()
                dirs.append(path)
                if (path / "pids.max").exists():
                    (path / "pids.max").write_text(str(pids_max))
                if (path / "memory.limit_in_bytes").exists():
                    # Twice the per-process RLIMIT_AS: one process meets its own limit (a
                    # MemoryError) first, while many together are still bounded.
                    (path / "memory.limit_in_bytes").write_text(str(2 * memory_bytes))
        except OSError:
            Cgroup(dirs).remove()
            raise
        return Cgroup(dirs)

    def add(self, pid: int) -> None:
        for path in self.dirs:
            (path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.dirs:
            try:
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def kill(self) -> None:
        """SIGKILL everything in the group until it stays empty (a fork bomb keeps forking
        until its last member is gone; pids.max bounds each round)."""
        for _ in range(1000):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                signal_process(pid, signal.SIGKILL)
            time.sleep(0.002)

    def remove(self) -> None:
        for path in reversed(self.dirs):
            for _ in range(200):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        break
                    self.kill()
                    time.sleep(0.005)


def _remove_stale(parent: Path) -> None:
    """Groups of harness processes that died without cleaning up (a crashed worker, SIGKILL)."""
    for group in parent.glob("humanfix-*-*"):
        pid = group.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                runs = list(group.glob("run-*"))
            except FileNotFoundError:
                continue  # another xdist worker, opening its sandbox at the same time, removed it
            Cgroup([group, *runs]).remove()  # removed last to first


def open_cgroups() -> tuple[Cgroup | None, str]:
    """A parent group for this sandbox under our own groups, or None and why not."""
    pids_parent = own_group("pids")
    if pids_parent is None:
        return None, "no cgroup v1 pids hierarchy mounted at /sys/fs/cgroup/pids"
    for parent in (pids_parent, own_group("memory")):
        if parent is not None:
            _remove_stale(parent)
    name = f"humanfix-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    dirs = []
    try:
        (pids_parent / name).mkdir()
        dirs.append(pids_parent / name)
    except OSError as exc:
        return None, f"cannot create a pids cgroup under {pids_parent}: {exc.strerror or exc}"
    memory_parent = own_group("memory")
    if memory_parent is not None:
        try:
            (memory_parent / name).mkdir()
            dirs.append(memory_parent / name)
        except OSError:
            pass  # the pids group alone still bounds and reaps every process
    group = Cgroup(dirs)
    atexit.register(group.remove)
    return group, "pids" + (" and memory" if len(dirs) > 1 else "") + " cgroup"
