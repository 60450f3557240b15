"""The two isolation layers an execution can run in: bubblewrap, and a plain process.

`bwrap`: a read-only view of the file system with the home folder, the folders of the run's data
and every cache of answers hidden (`hidden_folders`), a private writable folder (the only one),
fresh /tmp and /dev that are read-only, new PID, network, IPC and UTS namespaces,
--die-with-parent, --new-session and every capability dropped; the bootstrap inside sets the
rlimits. `process`: an ordinary child process with a clean environment, rlimits and its own
network namespace where the kernel allows one; what it cannot stop, `ProcessLayer.limits`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .inside import program


@functools.cache
def network_mode(python: str = sys.executable) -> str:
    """'namespace' if this machine lets a process make its own network namespace, else 'guard'."""
    probe = program("child.py", "network_probe.py")
    try:
        done = subprocess.run([python, "-I", "-c", probe], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "guard"
    return "namespace" if done.returncode == 0 else "guard"


BOX = "/tmp/humanfix"  # where the writable folder appears inside bwrap
# The data shipped in the package: every language's tasks and their canonical solutions.
PACKAGED_DATA = Path(__file__).resolve().parents[1] / "data"
# Where the Hub's libraries cache datasets (HumanEvalPack, HumanEval+ and their answers).
HF_CACHE_VARIABLES = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
# A dataset's folder this close to / (/data, /srv) is not hidden whole: the files that look
# like data in it are, one by one.
MIN_HIDDEN_DEPTH = 3
DATA_SUFFIXES = (".jsonl", ".json", ".gz", ".parquet", ".arrow", ".csv")


class ProcessLayer:
    name = "process"
    # What this layer cannot stop, as measured (docs/sandbox.md#the-process-layer); printed
    # at the start of every run in it, one line each.
    NOT_PROTECTED = (
        "writes and deletions anywhere the harness's user may write (e.g. /tmp, the home folder)",
        "reading any file the harness's user may read: the dataset and the package's data (the "
        "canonical solutions), the Hugging Face cache, the run's reports and recorded replies",
        "reading other processes' environments through /proc, the harness's included",
        "a candidate that moves itself out of its cgroup",
    )
    # Added where no network namespace can be made: the socket guard patches socket.socket
    # only, so `_socket`, ctypes or a subprocess (curl) reach the network.
    NOT_PROTECTED_WITHOUT_NAMESPACE = (
        "the network: only a socket guard in the candidate's interpreter (no network "
        "namespace allowed here), which _socket, ctypes or a subprocess such as curl go around",
    )

    def __init__(self, python: str = sys.executable) -> None:
        self.network = network_mode(python)

    def command(self, argv: list[str], root: Path, cwd: Path,
                readable: tuple[Path, ...] = ()) -> list[str]:
        return argv

    def inside(self, path: Path, root: Path) -> str:
        return str(path)

    def exit_code(self, code: int) -> int:
        return code

    def limits(self) -> tuple[str, ...]:
        """What this layer, here, cannot hide or block."""
        return self.NOT_PROTECTED + (self.NOT_PROTECTED_WITHOUT_NAMESPACE
                                     if self.network == "guard" else ())

    def describe(self) -> str:
        net = ("own network namespace" if self.network == "namespace"
               else "socket guard (no network namespace allowed here)")
        return f"process layer, network: {net}"


def _masked_folders() -> list[Path]:
    """Folders replaced with an empty read-only one inside bwrap: /tmp (other runs' files) and
    the home folder (keys, tokens)."""
    home = Path.home().resolve()
    return [Path("/tmp"), *([home] if home not in (Path("/"), Path("/tmp")) and home.is_dir()
                            else [])]


def _needed_under(folder: Path, python: str) -> list[Path]:
    """Interpreter folders inside a masked folder (~/.pyenv, a venv in a clone under /tmp) that
    must stay visible."""
    needed = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                         Path(python).resolve().parent)}
    return sorted(p for p in needed if p.is_relative_to(folder) and p != folder)


def answer_caches(environ: dict[str, str] | None = None) -> list[Path]:
    """The Hugging Face caches this run's environment names, and the default one."""
    env = os.environ if environ is None else environ
    cache_home = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [Path(env[name]) for name in HF_CACHE_VARIABLES if env.get(name)] \
        + [cache_home / "huggingface"]


def hidden_folders(hidden: tuple[str, ...], masked: list[Path]) -> tuple[list[Path], list[Path]]:
    """The folders to hide whole and the files to hide one by one, for `hidden` (the run's
    data files and answer folders: a file's whole folder goes, with what lies beside it, such
    as other languages and HumanEval+), the package's data and the answer caches. What a
    masked folder hides already, or what does not exist, is left out."""
    folders: dict[Path, None] = {}
    files: dict[Path, None] = {}
    for path in [*map(Path, hidden), PACKAGED_DATA, *answer_caches()]:
        for real in dict.fromkeys([path.absolute(), path.resolve()]):
            folder = real if real.is_dir() else real.parent if real.is_file() else None
            if folder is None or any(folder.is_relative_to(m) for m in masked):
                continue
            if len(folder.parts) >= MIN_HIDDEN_DEPTH:
                folders[folder.resolve()] = None
                continue
            files.update(dict.fromkeys(f.resolve() for f in folder.iterdir() if f.is_file()
                                       and (f == real or f.name.endswith(DATA_SUFFIXES))))
    return list(folders), list(files)


class BwrapLayer:
    name = "bwrap"
    network = "bwrap"  # a network namespace bwrap made: only loopback, and nothing listens

    def __init__(self, bwrap: str, python: str = sys.executable,
                 hidden: tuple[str, ...] = ()) -> None:
        self.bwrap = bwrap
        self.python = python
        # The dataset and what lies beside it hold every task's canonical solution, the run's
        # reports and recorded replies the answers found so far: the candidate reads none.
        self.hidden = hidden

    def command(self, argv: list[str], root: Path, cwd: Path,
                readable: tuple[Path, ...] = ()) -> list[str]:
        args = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        masked = _masked_folders()
        folders, files = hidden_folders(self.hidden, masked)
        for folder in masked + folders:
            args += ["--tmpfs", str(folder)]
            # What must stay visible under it: the interpreter (a venv in the data's folder).
            for keep in _needed_under(folder, self.python):
                args += ["--ro-bind", str(keep), str(keep)]
        for hidden in files:
            args += ["--ro-bind", "/dev/null", str(hidden)]
        args += ["--bind", str(root), BOX]
        for folder in readable:  # under a masked folder (/tmp): shown again, read-only
            args += ["--ro-bind", str(folder), str(folder)]
        for folder in masked + folders:
            args += ["--remount-ro", str(folder)]
        args += ["--remount-ro", "/dev",
                 "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--die-with-parent", "--new-session",
                 "--cap-drop", "ALL", "--chdir", self.inside(cwd, root), "--", *argv]
        return args

    def inside(self, path: Path, root: Path) -> str:
        return str(Path(BOX, path.relative_to(root)))

    def exit_code(self, code: int) -> int:
        # bwrap's init reports a child killed by signal N as status 128 + N, as a shell does.
        return -(code - 128) if 128 < code < 128 + 65 else code

    def describe(self) -> str:
        return ("bwrap layer: read-only file system, home, data folders and answer caches "
                "hidden, private writable folder, "
                "new PID/network/IPC namespaces, no capabilities")


@functools.cache
def probe_bwrap(python: str = sys.executable) -> tuple[str | None, str]:
    """The bwrap executable if it can run our interpreter here, else None and why not."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    layer = BwrapLayer(bwrap, python)
    with tempfile.TemporaryDirectory(prefix=f"humanfix-probe-{os.getpid()}-") as root:
        argv = layer.command([python, "-I", "-c", "import os; print(os.getpid())"], Path(root),
                             Path(root))
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"bwrap did not run: {exc}"
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return None, f"bwrap cannot make a sandbox here: {reason}"
    return bwrap, "bwrap works"
