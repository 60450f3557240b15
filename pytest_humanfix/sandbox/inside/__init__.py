"""Programs that run inside the sandbox, kept as real files so that linters and type checkers
read them like the rest of the package.

The harness never imports them: `source` reads one as text, which the sandbox hands to a fresh
interpreter inside the layer (`python -I -c TEXT`). `child.py` is what every execution runs
before candidate code; `bootstrap.py` (a fresh interpreter), `warm_server.py` (the warm
executor's fork server) and `network_probe.py` (which network isolation this machine allows)
each run after it, in the same program; `prelude.py` is the BigCode
harness's imports, put before every candidate, verbatim: no docstring or comment, since its
lines count in the line numbers of the candidate's tracebacks. `guard.py` goes between a fixed
candidate and its tests for the guarded second run (agent/suspicion); `explain.py` before tests
whose asserts are explained (agent/feedback).
"""

from __future__ import annotations

import functools
from importlib.resources import files


@functools.cache
def source(name: str) -> str:
    """The text of the program file `name` (e.g. "child.py") in this folder."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def program(*names: str) -> str:
    """The files `names`, in order, as one program."""
    return "\n".join(source(name) for name in names)
