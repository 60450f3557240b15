"""What the tests of served engines look at: the requests an engine's log shows, and the
processes left on the machine (read from /proc, so a leftover engine is found by its port)."""

from __future__ import annotations

import re
from pathlib import Path


def chat_requests(log: Path) -> int:
    return len(re.findall(r'"POST /v1/chat/completions HTTP/1.1" 200', log.read_text()))


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def processes_with(fragment: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if fragment in cmdline:
                found.append(int(entry.name))
    return found

def assert_answered_by_a_model(rows: list[dict], count: int) -> None:
    assert len(rows) == count
    for row in rows:
        assert row["outcome"] in ("fixed", "unfixed"), row["error"]
        assert row["tokens"]["prompt"] > 0 and row["tokens"]["completion"] > 0
