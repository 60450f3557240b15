"""Programs that run inside the sandbox, kept as real files so that linters and type checkers
read them like the rest of the package. The harness never imports them: `source` reads one as
text, which the sandbox hands to an interpreter inside the layer (`python -I -c TEXT`).
`child.py` runs first in every execution; `prelude.py` is BigCode's imports, verbatim, with no
docstring or comment, since its lines count in the candidate's tracebacks. What each file does:
docs/sandbox.md#programs-inside-the-sandbox.
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
