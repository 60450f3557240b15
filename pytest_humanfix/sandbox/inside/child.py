"""What every process of an execution runs first: in a fresh interpreter (before `bootstrap.py`)
and in each child of the warm executor (before `warm_server.py`) alike.

An execution is two processes that never share anything but two pipes: the candidate, which
answers calls, and the tests, which make them (docs/sandbox.md#the-tests-and-the-candidate-apart).
Each finds its descriptors at fixed numbers (`descriptors.py`), its program among them, never a
file of its folder. Each writes `started` on `STATUS` once its
isolation is in place; the candidate then closes it, and only the tests write `passed` there,
once their last line has run: nothing the candidate does reaches the verdict but its answers.
"""

import os
import resource
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time descriptors.py comes first, the roles' programs after
    from .answer import answer_calls
    from .descriptors import DESCRIPTORS, PROGRAM, STATUS
    from .tests import run_tests
    from .toolchain import run_steps

# Isolation could not be set up: the harness reports a sandbox fault, never "not fixed".
FAULT_EXIT = 113
STARTED, PASSED = b"started\n", b"passed\n"
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24


def fault(message: str) -> None:
    sys.stderr.write("humanfix sandbox: " + message + "\n")
    sys.stderr.flush()
    os._exit(FAULT_EXIT)


def isolate_network(mode: str) -> None:
    """'namespace': a new, empty network namespace; 'guard': sockets that refuse to connect;
    'bwrap': nothing to do, bwrap made the namespace."""
    if mode == "namespace":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        clone_newnet, clone_newuser = 0x40000000, 0x10000000
        if libc.unshare(clone_newnet) != 0 and libc.unshare(clone_newuser | clone_newnet) != 0:
            fault(f"cannot create a network namespace (errno {ctypes.get_errno()})")
    elif mode == "guard":
        import socket

        def refuse(*args: object, **kwargs: object) -> Any:
            raise OSError(101, "network is disabled in the humanfix sandbox")

        for name in ("connect", "connect_ex", "bind", "sendto", "sendmsg"):
            setattr(socket.socket, name, refuse)
        socket.create_connection = refuse
        socket.getaddrinfo = refuse


def limit(rlimits: dict[str, list[int]]) -> None:
    for name, (soft, hard) in rlimits.items():
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (ValueError, OSError) as exc:
            fault(f"cannot set {name}: {exc}")


def arrange(fds: list[int]) -> None:
    """Puts the descriptors the harness gave at DESCRIPTORS' numbers and closes every other
    one but stdin (the control pipes above all)."""
    moved = [os.dup(fd) for fd in fds]  # above any number they must land on
    for fd, number in zip(moved, DESCRIPTORS, strict=True):
        os.dup2(fd, number)
    os.closerange(PROGRAM + 1, 1 << 16)


def unprivileged(role: str) -> None:
    """No process of an execution can gain privileges; the tests' cannot be read or written
    through ptrace or /proc/<pid>/mem by a process without CAP_SYS_PTRACE, and the candidate,
    where it would run as root in the process layer, has every capability dropped first."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    if role == "tests":
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if role != "tests" and os.geteuid() == 0:
        for capability in range(64):
            prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this pid
        data = (ctypes.c_uint32 * 6)()
        if ctypes.CDLL(None, use_errno=True).capset(header, data) != 0:
            fault(f"cannot drop the candidate's capabilities (errno {ctypes.get_errno()})")


def program_text() -> str:
    with os.fdopen(PROGRAM, "rb") as handle:
        return handle.read().decode("utf-8")


def run(cfg: dict[str, Any]) -> None:
    """The role's program: the candidate's, which answers calls, or the tests', which make
    them and, ended, write `passed`."""
    role = cfg["role"]
    unprivileged(role)
    os.write(STATUS, STARTED)
    # From here on, whatever happens is the doing of the process's program.
    if role == "candidate":
        os.close(STATUS)
    text = program_text()
    if cfg["steps"]:
        run_steps(text)
    elif role == "candidate":
        answer_calls(text, cfg["name"], cfg["entry_point"])
    else:
        run_tests(text, cfg["name"], cfg["entry_point"])
    if role != "candidate":
        os.write(STATUS, PASSED)

