"""Per-execution cgroups (sandbox/cgroup.py) on a hierarchy of plain folders: where our group is
found, what a child group is given, what it lists, and which groups a crashed harness left that
are removed. Nothing here needs root or a mounted cgroup file system."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_humanfix.sandbox import cgroup
from pytest_humanfix.sandbox.cgroup import Cgroup


def dead_pid() -> int:
    """A process id that no process has now."""
    pid = 4_000_000
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid


@pytest.fixture
def hierarchy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A v1 hierarchy with pids and memory mounted, this process in /harness of each."""
    for controller in ("pids", "memory"):
        group = tmp_path / controller / "harness"
        group.mkdir(parents=True)
        (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    proc = tmp_path / "self-cgroup"
    proc.write_text("12:pids:/harness\n11:cpu,cpuacct:/\n4:memory:/harness\n0::/\n")
    real_path = Path

    def path(*parts: str) -> Path:
        return proc if parts == ("/proc/self/cgroup",) else real_path(*parts)

    monkeypatch.setattr(cgroup, "ROOT", tmp_path)
    monkeypatch.setattr(cgroup, "Path", path)
    return tmp_path


def test_our_group_is_read_from_proc_self_cgroup(hierarchy):
    assert cgroup.own_group("pids") == hierarchy / "pids" / "harness"
    assert cgroup.own_group("cpu") is None  # listed, but not mounted as a folder here
    assert cgroup.own_group("blkio") is None  # not listed at all


def test_groups_a_crashed_harness_left_are_removed_and_a_living_ones_kept(hierarchy):
    parent = hierarchy / "pids" / "harness"
    stale = parent / f"humanfix-{dead_pid()}-abc123"
    (stale / "run-7").mkdir(parents=True)
    living = parent / f"humanfix-{os.getppid()}-def456"
    living.mkdir()
    group, how = cgroup.open_cgroups()
    assert not stale.exists() and living.exists()
    assert group is not None and how == "pids and memory cgroup"
    assert [d.parent for d in group.dirs] == [parent, hierarchy / "memory" / "harness"]
    assert all(d.name.startswith(f"humanfix-{os.getpid()}-") for d in group.dirs)
    group.remove()
    assert not any(d.exists() for d in group.dirs)


def test_a_stale_group_another_worker_removes_first_is_passed_over(hierarchy, monkeypatch):
    # Two xdist workers open their sandboxes at once: both list the same stale group, and the
    # first removes it while the second lists its runs (pathlib's scandir then raises).
    parent = hierarchy / "pids" / "harness"
    stale = parent / f"humanfix-{dead_pid()}-abc123"
    (stale / "run-7").mkdir(parents=True)
    real_glob = Path.glob

    def glob_then_lose_the_race(self: Path, pattern: str):
        if self == stale:
            (stale / "run-7").rmdir()
            stale.rmdir()
            raise FileNotFoundError(2, "No such file or directory", str(stale))
        return real_glob(self, pattern)

    monkeypatch.setattr(Path, "glob", glob_then_lose_the_race)
    group, how = cgroup.open_cgroups()
    assert group is not None and how == "pids and memory cgroup"
    assert not stale.exists()
    group.remove()


def test_without_a_pids_hierarchy_there_are_no_cgroups_and_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroup, "own_group", lambda controller: None)
    assert cgroup.open_cgroups() == (
        None, "no cgroup v1 pids hierarchy mounted at /sys/fs/cgroup/pids")


def test_a_child_group_caps_processes_and_memory_where_the_files_are(tmp_path, monkeypatch):
    parent = tmp_path / "pids-parent"
    parent.mkdir()
    made = []
    real_mkdir = Path.mkdir

    def mkdir_with_limit_files(self: Path, *args, **kwargs) -> None:
        # A cgroup file system makes a group's control files along with its folder.
        real_mkdir(self, *args, **kwargs)
        (self / "pids.max").write_text("max")
        (self / "memory.limit_in_bytes").write_text("0")
        made.append(self)

    monkeypatch.setattr(Path, "mkdir", mkdir_with_limit_files)
    child = Cgroup([parent]).child(pids_max=64, memory_bytes=1 << 30)
    assert child.dirs == made and child.dirs[0].parent == parent
    assert (child.dirs[0] / "pids.max").read_text() == "64"
    # Twice the per-process limit: one process meets its RLIMIT_AS first.
    assert (child.dirs[0] / "memory.limit_in_bytes").read_text() == str(2 << 30)
    assert child.bounds_memory


def test_a_group_lists_the_processes_of_all_its_hierarchies(tmp_path):
    dirs = [tmp_path / "pids", tmp_path / "memory", tmp_path / "gone"]
    for folder, procs in zip(dirs[:2], ("10\n11\n", "11\n12\n"), strict=True):
        folder.mkdir()
        (folder / "cgroup.procs").write_text(procs)
    group = Cgroup(dirs)
    assert group.pids() == {10, 11, 12}
    assert not group.bounds_memory


def test_an_empty_group_is_killed_at_once_and_removed(tmp_path):
    folder = tmp_path / "run-0"
    folder.mkdir()
    group = Cgroup([folder])
    group.kill()  # nothing listed: returns without signalling anyone
    group.remove()
    assert not folder.exists()
    group.remove()  # already gone: no error
