"""Files written whole or not at all: the content goes to a temporary file beside the target,
is flushed to disk, and is renamed over it (a rename within a folder is atomic), so that a
reader, or a run killed mid-write, finds the old file or the new one, never part of one. Every
report file the harness writes goes through `write_atomically` (docs/reports.md).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, content: str | bytes) -> Path:
    """Replaces `path` with `content` (text as UTF-8) whole; the temporary file is named by
    this process, so that two processes writing one file never write into each other's."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    try:
        with partial.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)  # left only where the rename did not happen
    return path
