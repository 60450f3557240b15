"""The run's page in headless Chromium, which scripts/setup installs: filtered from its address,
the flipped tasks read from the rendered DOM, a full six-language run with four rounds
rendered, a reply that holds script shown as text and run never, and a screenshot taken."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from view_runs import HOSTILE, full_run, task_record

from pytest_humanfix.reporting.gates import compare
from pytest_humanfix.reporting.summary import build, times_from_records
from pytest_humanfix.reporting.view import write_page


@pytest.fixture
def chromium(tmp_path: Path) -> list[str]:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium is not installed: apt-get install -y chromium (scripts/setup does)")
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}"]


def written(path: Path, records, baseline=None) -> Path:
    comparison = compare(records, baseline) if baseline is not None else None
    summary = build(records, times_from_records(records), comparison)
    return write_page(summary, records, path, baseline)


def dom(chromium: list[str], page: Path, fragment: str = "") -> str:
    """The DOM once the page's script ran, the filters in FRAGMENT applied as a person's
    choices would be (the page keeps them in its address)."""
    return subprocess.run([*chromium, "--dump-dom", page.as_uri() + fragment],
                          capture_output=True, text=True, timeout=60, check=True).stdout


def shown(text: str) -> list[tuple[str, str]]:
    """(outcome, task id) of each task the DOM shows, in order; hidden ones left out."""
    visible = [m for m in re.finditer(r"<details ([^>]*)>", text) if "hidden" not in m[1]]
    return [(re.search(r'class="task (\w+)"', m[1])[1], re.search(r'data-id="([^"]+)"', m[1])[1])
            for m in visible]


def test_the_page_filters_and_puts_the_flipped_tasks_first(chromium, tmp_path):
    baseline = {r["task_id"]: r for r in
                [task_record(language, n, 0, 3) for language in ("python", "js")
                 for n in range(6)]}
    records = [task_record(language, n, None if n in (2, 4) and language == "js" else n % 3, 3)
               for language in ("python", "js") for n in range(6)]
    page = written(tmp_path / "index.html", records, baseline)
    everything = dom(chromium, page, "#open=all")
    assert "12 of 12 tasks shown" in everything
    assert shown(everything)[:2] == [("unfixed", "JavaScript/2"), ("unfixed", "JavaScript/4")]
    flipped = re.findall(r'<span class="flip regression">regression </span><b>([^<]+) </b>',
                         everything)
    assert flipped == ["JavaScript/2", "JavaScript/4"]
    # Opened, a flipped task shows both runs side by side, and every task its trajectory.
    assert everything.count('<div class="side">') == 12
    assert everything.count("<h4>baseline: fixed (round 0)</h4>") == 12
    assert everything.count("<h4>this run: unfixed (round 2)</h4>") == 2
    assert "The tests failed: AssertionError: f(1) == 2" in everything
    assert '<span class="add">+    return x + 2\n</span>' in everything
    filtered = dom(chromium, page, "#language=js&outcome=fixed&round=1")
    assert shown(filtered) == [("fixed", "JavaScript/1")]
    assert "1 of 12 tasks shown" in filtered
    screenshot = tmp_path / "view.png"
    subprocess.run([*chromium, f"--screenshot={screenshot}", "--window-size=1300,1500",
                    page.as_uri() + "#flip=regression&open=all"],
                   capture_output=True, timeout=60, check=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000


def test_a_reply_holding_script_shows_as_text_and_runs_nothing(chromium, tmp_path):
    records = [task_record("python", 0, None, 2, reply=HOSTILE)]
    rendered = dom(chromium, written(tmp_path / "index.html", records), "#open=all")
    assert 'data-rendered="1"' in rendered, "the page's own script did not run"
    assert "pwned" not in rendered.split("<body", 1)[1].split(">", 1)[0]
    replies = re.findall(r'<pre class="reply">(.*?)</pre>', rendered, re.S)
    assert len(replies) == 2
    assert all("&lt;script&gt;document.body.dataset.pwned" in reply for reply in replies)
    assert "&lt;img src=x onerror=" in replies[0]


def test_a_six_language_run_of_four_rounds_renders(chromium, tmp_path):
    records = full_run()
    page = written(tmp_path / "index.html", records)
    rendered = dom(chromium, page, "#language=rust&round=3&outcome=unfixed")
    assert 'data-rendered="3936"' in rendered and "131 of 3936 tasks shown" in rendered
    assert rendered.count("<details ") == 3936
    assert len(shown(rendered)) == 131 and {o for o, _ in shown(rendered)} == {"unfixed"}
    # Closed tasks are not rendered until opened: the DOM holds their heads only.
    assert '<div class="attempt">' not in rendered
