"""A fresh interpreter's process of an execution, run after `child.py` and the roles' programs
in the same program: the configuration comes through the pipe whose descriptor is the one
argument, the descriptors it names are put in place, then the role's program runs. See
docs/sandbox.md#programs-inside-the-sandbox."""

import json
import os
import sys
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .child import arrange, isolate_network, limit, run

with os.fdopen(int(sys.argv[1]), encoding="utf-8") as pipe:
    cfg = json.load(pipe)
del sys.argv[1:]
arrange(cfg.pop("fds"))
isolate_network(cfg["network"])
limit(cfg["rlimits"])
try:
    run(cfg)
except Exception:
    # Printed from Python, which reads the programs' lines from linecache: the interpreter's
    # own printing reads them from files, and the programs have none.
    traceback.print_exc()
    sys.exit(1)
