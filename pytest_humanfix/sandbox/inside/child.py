"""What every execution runs before candidate code: in a fresh interpreter (before
`bootstrap.py`) and in each child of the warm executor (before `warm_server.py`) alike.

The harness reads whether isolation was set up from the files named in the configuration:
`started` exists once the candidate may run, `done` holds the nonce once its program returned
(docs/sandbox.md#the-proof-that-the-tests-ran).
"""

import builtins
import os
import resource
import sys
from typing import Any

# Isolation could not be set up: the harness reports a sandbox fault, never "not fixed".
FAULT_EXIT = 113


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


def run(cfg: dict[str, Any]) -> None:
    # Isolation is in place: from here on, whatever happens is the candidate's doing.
    open(cfg["started"], "w").close()
    program, done, nonce = cfg["program"], cfg["done"], cfg["nonce"]
    cfg.clear()
    with open(program, encoding="utf-8") as f:
        code = compile(f.read(), program, "exec")
    exec(code, {"__name__": "__main__", "__builtins__": builtins})
    with open(done, "w") as f:
        f.write(nonce)
