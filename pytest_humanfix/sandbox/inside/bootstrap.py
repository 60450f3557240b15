"""A fresh interpreter's process of an execution, run after `child.py` and the roles' programs
in the same program: the configuration comes through the pipe whose descriptor is the one
argument, the descriptors it names are put in place, then the role's program runs. See
docs/sandbox.md#programs-inside-the-sandbox."""

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time child.py's text comes first in the same program
    from .child import arrange, isolate_network, limit, run

with os.fdopen(int(sys.argv[1]), encoding="utf-8") as pipe:
    cfg = json.load(pipe)
del sys.argv[1:]
arrange(cfg.pop("fds"))
isolate_network(cfg["network"])
limit(cfg["rlimits"])
run(cfg)
