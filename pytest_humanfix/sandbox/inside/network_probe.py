"""Run once per process after `child.py`, in the same program: exits with status 0 where the
kernel lets a process make its own network namespace, and with child.FAULT_EXIT where not
(docs/sandbox.md, the `process` layer)."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .child import isolate_network

isolate_network("namespace")
