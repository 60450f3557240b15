"""The two isolation layers an execution can run in: bubblewrap, and a plain process.

`bwrap`: deny by default. A process sees only what it needs, read-only (`shown_paths`): the
system's programs and libraries and /etc, the interpreter's standard library and numpy, the
worker's compile caches, every Python package folder among them emptied; its own writable
folder; fresh /tmp and /dev, read-only. New PID, network, IPC and UTS namespaces,
--die-with-parent, --new-session, no capabilities. `process`: an ordinary child process with a
clean environment, rlimits and its own network namespace where the kernel allows one; what it
cannot stop, `ProcessLayer.limits` (docs/sandbox.md#layers).
"""

from __future__ import annotations

import functools
import importlib.util
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
    probe = program("descriptors.py", "child.py", "network_probe.py")
    try:
        done = subprocess.run([python, "-I", "-c", probe], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "guard"
    return "namespace" if done.returncode == 0 else "guard"


BOX = "/tmp/humanfix"  # where the writable folder appears inside bwrap
# The system's folders a process inside bwrap sees, read-only, where they exist (a link among
# them, /bin -> usr/bin on a merged /usr, is made as the same link).
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Where Python packages are installed under a folder that is shown: emptied, since any of them
# may hold an installed copy of this package, whose data holds the canonical solutions.
PACKAGE_FOLDERS = ("lib/python3*/site-packages", "lib/python3*/dist-packages",
                   "local/lib/python3*/site-packages", "local/lib/python3*/dist-packages",
                   "lib/python3/dist-packages")
# The prelude's packages from outside the standard library, shown again inside their emptied
# folder, with the libraries their wheels carry beside them.
PRELUDE_PACKAGES = ("numpy",)
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
        "writes and deletions anywhere the harness's user may write (e.g. /tmp, the home folder, "
        "the folder where the tests of a compiled language are built)",
        "reading any file the harness's user may read: the dataset and the package's data (the "
        "canonical solutions), the Hugging Face cache, the run's reports and recorded replies",
        "a candidate that moves itself out of its cgroup",
        "signals to the harness's own processes, which run as the same user (a candidate that "
        "kills the harness stops the run)",
    )
    # Added where the harness does not run as root: a candidate of the same user, which has no
    # capabilities to drop, reads and traces the harness's processes. As root, the candidate's
    # capabilities are dropped (inside/child.py), and a process without them cannot read the
    # environment or memory of one that has them.
    NOT_PROTECTED_WITHOUT_ROOT = (
        "reading other processes' environments and memory through /proc and ptrace, the "
        "harness's included (a candidate of the same user; as root, the candidate's "
        "capabilities are dropped and it cannot)",
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
        return (self.NOT_PROTECTED
                + (self.NOT_PROTECTED_WITHOUT_ROOT if os.geteuid() != 0 else ())
                + (self.NOT_PROTECTED_WITHOUT_NAMESPACE if self.network == "guard" else ()))

    def describe(self) -> str:
        net = ("own network namespace" if self.network == "namespace"
               else "socket guard (no network namespace allowed here)")
        return f"process layer, network: {net}"


@functools.cache
def shown_paths(python: str = sys.executable) -> tuple[tuple[str, str, str], ...]:
    """What bwrap shows a process, as (option, source, destination) in the order given:
    the system's folders, the interpreter's prefixes, the package folders in them emptied,
    then the prelude's packages shown again (docs/sandbox.md#what-a-candidate-can-read)."""
    shown: list[tuple[str, str, str]] = []
    roots = []
    for folder in map(Path, SYSTEM_FOLDERS):
        if folder.is_symlink():
            shown.append(("--symlink", os.readlink(folder), str(folder)))
        elif folder.is_dir():
            roots.append(folder)
    interpreter = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    interpreter.add(Path(python).resolve().parent.parent)
    for prefix in sorted(interpreter):
        if not any(prefix.is_relative_to(root) for root in roots):
            roots.append(prefix)
    shown += [("--ro-bind", str(root), str(root)) for root in roots]
    emptied = sorted({found for root in roots for pattern in PACKAGE_FOLDERS
                      for found in root.glob(pattern) if found.is_dir()})
    shown += [("--tmpfs", str(folder), "") for folder in emptied]
    for name in PRELUDE_PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            package = Path(location).resolve()
            for path in (package, package.with_name(f"{name}.libs")):
                if path.is_dir():
                    shown.append(("--ro-bind", str(path), str(path)))
    shown += [("--remount-ro", str(folder), "") for folder in emptied]
    return tuple(shown)


def _inside_shown(path: Path, python: str) -> bool:
    return any(option == "--ro-bind" and path.is_relative_to(source)
               for option, source, _ in shown_paths(python))


def answer_caches(environ: dict[str, str] | None = None) -> list[Path]:
    """The Hugging Face caches this run's environment names, and the default one."""
    env = os.environ if environ is None else environ
    cache_home = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [Path(env[name]) for name in HF_CACHE_VARIABLES if env.get(name)] \
        + [cache_home / "huggingface"]


def hidden_folders(hidden: tuple[str, ...], python: str = sys.executable
                   ) -> tuple[list[Path], list[Path]]:
    """Of `hidden` (the run's data files and answer folders), the package's data and the
    answer caches, what lies inside a folder bwrap shows (a data set kept under /usr, say):
    the folders to hide whole and the files to hide one by one (a data file's whole folder
    goes, with what lies beside it, such as other languages and HumanEval+; a folder close to
    / loses only its data files). What does not exist, or is not shown, is left out."""
    folders: dict[Path, None] = {}
    files: dict[Path, None] = {}
    for path in [*map(Path, hidden), PACKAGED_DATA, *answer_caches()]:
        for real in dict.fromkeys([path.absolute(), path.resolve()]):
            folder = real if real.is_dir() else real.parent if real.is_file() else None
            if folder is None or not _inside_shown(folder, python):
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
        # The fresh /tmp first: a prefix shown below it (a venv in a clone under /tmp, as CI's)
        # is then bound on top of it instead of covered by it.
        args = [self.bwrap, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for option, source, destination in shown_paths(self.python):
            args += [option, source, *([destination] if destination else [])]
        folders, files = hidden_folders(self.hidden, self.python)
        for folder in folders:
            args += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
        for hidden in files:
            args += ["--ro-bind", "/dev/null", str(hidden)]
        args += ["--bind", str(root), BOX]
        for folder in readable:
            args += ["--ro-bind", str(folder), str(folder)]
        args += ["--remount-ro", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/",
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
        return ("bwrap layer: only the system, the interpreter and numpy shown, read-only; "
                "private writable folder, new PID/network/IPC namespaces, no capabilities")


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
