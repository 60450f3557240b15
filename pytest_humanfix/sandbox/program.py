"""The program an execution runs, assembled as the BigCode harness assembles it."""

from __future__ import annotations

# The imports the BigCode evaluation harness puts before every Python candidate (IMPORT_HELPER).
PRELUDE = "\n".join([
    "import math",
    "import re",
    "import sys",
    "import copy",
    "import datetime",
    "import itertools",
    "import collections",
    "import heapq",
    "import statistics",
    "import functools",
    "import hashlib",
    "import numpy",
    "import numpy as np",
    "import string",
    "from typing import *",
    "from collections import *",
])


def build_program(code: str, test: str, test_setup: str = "") -> str:
    """The program the BigCode harness runs: prelude, candidate, then the task's test."""
    candidate = (PRELUDE + "\n" + code).strip()
    return candidate + "\n" + (test_setup + "\n" if test_setup else "") + test + "\n"

