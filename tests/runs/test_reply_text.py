"""One reply never stops a run: replies holding lone surrogates, NUL, control characters or bytes
that are not UTF-8, and replies of megabytes, run to the end in one process and under xdist,
and every file the run writes reads back strictly, the text as stored (jsonl.storable_text)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from openai_stub import StubServer

from pytest_humanfix.dataset import load_tasks
from pytest_humanfix.jsonl import CUT_MARK, TEXT_CAP_BYTES
from pytest_humanfix.reporting.cli import main as report_main
from pytest_humanfix.reporting.stats import wilson_interval

DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)
# What a model may write, in the prose around its code and in a comment inside the code: lone
# surrogates (from a JSON escape, or a byte a server decoded with surrogateescape), NUL, C0 and
# C1 controls and DEL, what a server's errors="replace" leaves, and what ends a script element.
ODD = {"Python/0": "\ud800 and \udcff\udcfe",
       "Python/1": "NUL\x00here",
       "Python/2": "\x01\x07\x1b[31m\x1f \x80\x85\x9f\x7f",
       "Python/3": "\ufffd\u2028</script><!--"}


def reply_with(code: str, odd: str) -> str:
    """A fenced fix with `odd` in the prose and in a comment on the function's first line."""
    head, _, body = code.partition("\n")
    return f"Here {odd} is the fix:\n```python\n{head}  # {odd}\n{body}\n```\n{odd}"


def stored(text: str) -> str:
    """`text` as a record keeps it: a lone surrogate as the six characters of its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def strict_rows(path: Path) -> list[dict]:
    """The JSONL's rows, read as a strict reader reads them: UTF-8 with no error allowed, each
    line a JSON object, no lone surrogate in any text (which serde_json and others refuse)."""
    rows = [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]
    for row in rows:
        assert isinstance(row, dict)
        json.dumps(row, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return rows


def page_tasks(folder: Path) -> dict[str, dict]:
    text = (folder / "index.html").read_bytes().decode("utf-8")
    [data] = DATA.findall(text)
    return {task["id"]: task for task in json.loads(data)["tasks"]}


@pytest.fixture
def tasks(dataset: Path) -> dict:
    return {task.task_id: task for task in load_tasks(str(dataset))[:4]}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_odd_characters_in_replies_round_trip_through_every_file(
        humanfix_pytester: pytest.Pytester, tasks: dict, workers: list[str]) -> None:
    replies = humanfix_pytester.path / "replies.jsonl"
    sent = {task_id: reply_with(tasks[task_id].canonical_code, odd) for task_id, odd in ODD.items()}
    replies.write_text("".join(json.dumps({"task_id": t, "completion": r}) + "\n"
                               for t, r in sent.items()))
    result = humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{replies}", "--humanfix-max=4", "-p", "no:cacheprovider",
        *workers)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    reports = humanfix_pytester.path / "reports"
    records = {r["task_id"]: r for r in strict_rows(reports / "humanfix.jsonl")}
    assert sorted(records) == sorted(ODD)
    for task_id, reply in sent.items():
        record = records[task_id]
        assert record["outcome"] != "error", record["error"]
        assert record["attempts"][0]["reply"] == stored(reply)
        assert "truncated" not in record
    # NUL and the controls are kept as they are, the surrogates escaped.
    assert "NUL\x00here" in records["Python/1"]["attempts"][0]["reply"]
    assert "\\ud800 and \\udcff\\udcfe" in records["Python/0"]["attempts"][0]["reply"]
    on_page = page_tasks(reports)
    assert {t: on_page[t]["attempts"][0]["reply"] for t in ODD} == \
        {t: stored(r) for t, r in sent.items()}
    for name in ("junit.xml", "summary.svg"):
        ET.parse(reports / name)
    summary = json.loads((reports / "summary.json").read_bytes().decode("utf-8"))
    assert summary["tasks"]["total"] == 4 and summary["tasks"]["errors"] == 0
    (reports / "summary.md").read_bytes().decode("utf-8")
    # The stored records read back as a results file, and as replies to replay.
    assert report_main([str(reports / "humanfix.jsonl"), "--out",
                        str(humanfix_pytester.path / "again")]) == 0


def test_a_server_that_sends_bytes_that_are_not_utf8(humanfix_pytester: pytest.Pytester,
                                                     tasks: dict) -> None:
    """A surrogate's UTF-8 form (ED A0 80, which Python's JSON reader takes) is stored
    escaped; a byte no decoder takes (FF) fails that reply, a harness error retried once, then
    scored not fixed, and the run goes on."""
    reports = humanfix_pytester.path / "reports"
    outcomes = {}
    for raw in (b"\xed\xa0\x80", b"\xff"):
        reply = reply_with(tasks["Python/0"].canonical_code, "@")
        with StubServer(reply=reply, raw={"@": raw}) as stub:
            result = humanfix_pytester.runpytest(
                "--humanfix-model=openai:stub", f"--humanfix-base-url={stub.base_url}",
                "--humanfix-max=1", "-p", "no:cacheprovider")
            asked = len(stub.posts())
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
        [record] = strict_rows(reports / "humanfix.jsonl")
        assert (reports / "index.html").is_file()
        ET.parse(reports / "junit.xml")
        outcomes[raw] = (record, asked, json.loads((reports / "summary.json").read_text()))
    surrogate, asked, _ = outcomes[b"\xed\xa0\x80"]
    assert surrogate["outcome"] == "fixed" and asked == 1
    # The reply as the client cut it at its stop (the closing fence), the surrogate escaped.
    assert surrogate["attempts"][0]["reply"].startswith("Here \\ud800 is the fix:")
    assert "  # \\ud800\n" in surrogate["attempts"][0]["reply"]
    unreadable, asked, summary = outcomes[b"\xff"]
    assert unreadable["outcome"] == "error" and asked == 2
    assert "answered with bytes that are not UTF-8 (invalid start byte, b'\\xff'" in \
        unreadable["error"]
    assert unreadable["first_try"]["error"].splitlines()[0] == unreadable["error"].splitlines()[0]
    assert summary["pass_at_1"] == {"value": 0.0, "ci95": list(wilson_interval(0, 1)),
                                    "tasks": 1}
    assert (summary["tasks"]["errors"], summary["tasks"]["retried"]) == (1, 1)


def test_a_reply_of_megabytes_is_stored_cut_and_graded_whole(
        humanfix_pytester: pytest.Pytester, tasks: dict) -> None:
    task = tasks["Python/0"]
    head, _, body = task.canonical_code.partition("\n")
    # A comment of 4 MiB inside the function: the reply, its code and its diff are that large.
    code = f"{head}\n    # {'x' * (4 << 20)}\n{body}"
    replies = humanfix_pytester.path / "replies.jsonl"
    replies.write_text(json.dumps({"task_id": task.task_id,
                                   "completion": f"```python\n{code}\n```"}) + "\n")
    result = humanfix_pytester.runpytest(
        f"--humanfix-model=replay:{replies}", "--humanfix-max=1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # graded on the whole code
    reports = humanfix_pytester.path / "reports"
    [record] = strict_rows(reports / "humanfix.jsonl")
    assert record["outcome"] == "fixed"
    whole = len(code.encode()) + len("```python\n\n```")
    assert record["truncated"]["/attempts/0/reply"] == whole
    assert {"/attempts/0/code", "/attempts/0/diff", "/code", "/diff"} <= \
        set(record["truncated"])
    reply = record["attempts"][0]["reply"]
    mark = CUT_MARK.format(kept=TEXT_CAP_BYTES, whole=whole)
    assert reply.endswith(mark) and len(reply.encode()) == TEXT_CAP_BYTES + len(mark)
    assert reply.startswith("```python\n" + head)
    # Each text at most the cap: the line, the page and the JUnit file stay under 2 MB, where
    # the whole reply made a line of 16 MB and a page of 13 MB.
    sizes = {name: (reports / name).stat().st_size
             for name in ("humanfix.jsonl", "index.html", "junit.xml")}
    assert all(size < 2_000_000 for size in sizes.values()), sizes
    assert sizes["humanfix.jsonl"] > TEXT_CAP_BYTES * 4, "the texts are kept up to the cap"
