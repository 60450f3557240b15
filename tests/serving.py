"""What the tests of served engines look at: the requests an engine's log shows, and the
processes left on the machine (read from /proc, so a leftover engine is found by its port)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any


def chat_requests(log: Path, status: str = "200") -> int:
    """Chat requests the engine answered with `status` (a regex: `\\d+` counts every answer)."""
    return len(re.findall(rf'"POST /v1/chat/completions HTTP/1.1" {status}\b', log.read_text()))


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


def engine_pid_and_port(outlines: list[str], engine: str) -> tuple[int, int]:
    """The pid and port of the one engine a run's terminal summary names."""
    (line,) = [out for out in outlines if out.startswith(f"humanfix serve: {engine} engine pid")]
    found = re.search(r"pid (\d+) .*:(\d+)/v1", line)
    assert found, line
    return int(found.group(1)), int(found.group(2))


def assert_served_and_gone(records: list[dict], log: Path, pid: int, port: int) -> None:
    """Both workers' tasks went to the one engine and to nothing else, and it is gone."""
    assert_answered_by_a_model(records, 2)
    assert {r["worker"] for r in records} <= {"gw0", "gw1"}
    assert chat_requests(log) == 2
    assert not process_alive(pid)
    assert processes_with(f"--port {port} ") == []


def started_engine(path: Path, context: int, slots: int) -> Any:
    """Our llama.cpp engine's model in this process, its evaluation loop running."""
    from pytest_humanfix.models.engines.llamacpp import decode

    model = decode.BatchedModel(str(path), context, threads=1, slots=slots, batch=64)
    threading.Thread(target=model.run, daemon=True).start()
    return model


def engine_http(model: Any) -> Iterator[str]:
    """The engine's HTTP front over `model` on a free port; yields its base URL."""
    from pytest_humanfix.models.engines.llamacpp import server

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), server.handler_for(model, "tiny", 0))
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
