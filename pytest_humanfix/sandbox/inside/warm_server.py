"""A fork server of the warm executor, run after `child.py` and the roles' programs in the same
program, inside the layer: one serves the candidates' processes, another the tests'.

Arguments: the network mode, "pdeathsig" when the server must die with the harness (the process
layer; bwrap's --die-with-parent does it otherwise), and the prelude, imported once here so that
every child starts with it loaded. The harness speaks to it on a packet socket at descriptor 0
(`serve`); why it forks ahead: docs/sandbox.md#the-warm-executor.
"""

import atexit
import ctypes
import json
import os
import signal
import socket
import sys
import threading
import traceback
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .child import arrange, isolate_network, limit, run
    from .descriptors import DESCRIPTORS

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
# The largest configuration message, and the descriptors that come with it.
MESSAGE_BYTES = 1 << 16


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def read_config(channel: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """The execution's configuration and descriptors, sent once the harness has put this
    process in its cgroup (nothing at all when the harness went away first)."""
    message, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, len(DESCRIPTORS))
    channel.close()
    config: dict[str, Any] = json.loads(message)
    return config, fds


def child(channel: socket.socket) -> NoReturn:
    code = 1
    try:
        cfg, fds = read_config(channel)
        os.setsid()
        os.chdir(cfg["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        arrange(fds)  # the server's own descriptors above all go
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        os.environ.clear()
        os.environ.update(cfg.pop("env"))
        limit(cfg.pop("rlimits"))
        run(cfg)
        code = 0
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        # What an interpreter does at its end: wait for the threads, run the exit handlers.
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # private, not in typeshed
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def serve(control: socket.socket) -> None:
    """One packet each way: the server says "ready"; the harness asks for a child ("fork"); the
    server forks one, which waits for its configuration, and says "forked". The harness puts the
    child in the execution's cgroup and sends its configuration (JSON) with its descriptors,
    which the server hands to the child, then answers {"exit_code": N} once the child has
    ended."""
    control.send(b"ready")
    while control.recv(MESSAGE_BYTES) == b"fork":
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            control.close()
            ours.close()
            child(theirs)
        theirs.close()
        control.send(b"forked")
        message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, len(DESCRIPTORS))
        try:
            socket.send_fds(ours, [message], fds)
        except OSError:
            pass  # the child was killed before it read: its exit status below says so
        for fd in fds:
            os.close(fd)
        ours.close()
        message = b""  # the next child starts from this frame: nothing of this execution stays
        status = os.waitpid(pid, 0)[1]
        control.send(json.dumps({"exit_code": os.waitstatus_to_exitcode(status)}).encode())


isolate_network(sys.argv[1])
prctl = ctypes.CDLL(None).prctl
if sys.argv[2] == "pdeathsig":
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # die with the harness
# Not dumpable: a candidate without CAP_SYS_PTRACE cannot read or write this process's memory
# through ptrace or /proc/<pid>/mem, so it cannot tamper with the executions after its own.
prctl(PR_SET_DUMPABLE, 0)
exec(sys.argv[3], {})
atexit._clear()  # the children run their program's exit handlers, never ours
del sys.argv[1:]
control = socket.socket(fileno=os.dup(0))
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
serve(control)
