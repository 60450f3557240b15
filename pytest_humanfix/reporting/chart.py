"""summary.png: pass@1 per bug type with its interval, and seconds and tokens per task.

matplotlib is optional (the `charts` extra); without it no chart is drawn. The object API with
an Agg canvas is used instead of pyplot, so no global backend or figure state is touched.

Importing matplotlib costs more than drawing (most of a second against a fifth), so a run draws
through a `RunChart`: a child started with the run, which imports matplotlib while the tasks run
and draws once it is sent the summary. `humanfix-report` draws in its own process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, cast

# Most seconds a run waits for its chart once the summary is sent.
DRAW_TIMEOUT = 120.0


class ChartError(Exception):
    """The chart process failed; the message says how."""


def write_chart(summary: dict[str, Any], records: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(13, 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    rates, seconds_axes, tokens_axes = figure.subplots(1, 3, width_ratios=[1.6, 1, 1])

    rows = summary["by_bug_type"]
    names = [f"{row['bug_type']} (n={row['scored']})" for row in rows]
    values = [row["pass_at_1"]["value"] for row in rows]
    below = [v - row["pass_at_1"]["ci95"][0] for v, row in zip(values, rows, strict=True)]
    above = [row["pass_at_1"]["ci95"][1] - v for v, row in zip(values, rows, strict=True)]
    rates.barh(names, values, xerr=[below, above], color="#4c72b0", capsize=3)
    overall = summary["pass_at_1"]["value"]
    rates.axvline(overall, color="#c44e52", linestyle="--", label=f"all tasks {overall:.1%}")
    rates.set_xlim(0, 1)
    rates.invert_yaxis()
    rates.set_xlabel("pass@1 (bars: 95% Wilson interval)")
    rates.set_title(f"pass@1 per bug type: {summary['run'].get('model')}")
    rates.legend(loc="lower right")

    seconds = [float(r.get("seconds") or 0) for r in records]
    tokens = [sum((r.get("tokens") or {}).values()) for r in records]
    seconds_axes.hist(seconds, bins=20, color="#55a868")
    seconds_axes.set_xlabel("seconds per task")
    seconds_axes.set_ylabel("tasks")
    tokens_axes.hist(tokens, bins=20, color="#8172b2")
    tokens_axes.set_xlabel("tokens per task (prompt + completion)")
    figure.savefig(path, dpi=100)
    return path


class RunChart:
    """Draws a run's summary.png in a child process that imports matplotlib while the run goes on.

    The child is started with the run and waits for the summary on its stdin. `draw` sends it
    and returns, so the drawing overlaps the rest of the run's end (xdist's shutdown, JUnit);
    `finish` waits for it, and the run lists the file only after that. The child has its own
    session, so a Ctrl-C to the run does not stop it before the interrupted run's chart is
    drawn; when the run ends without drawing, or dies, the child reads the end of its stdin and
    exits. Where this process has matplotlib loaded already, or lacks it, no child starts and
    `draw` is `write_chart` here."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.pending: Path | None = None  # where the child was asked to draw
        if "matplotlib.figure" in sys.modules or importlib.util.find_spec("matplotlib") is None:
            return
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)

    def draw(self, summary: dict[str, Any], records: list[dict[str, Any]],
             path: Path) -> Path | None:
        """The path the chart is written at (by the child: once `finish` returns), or None
        when no chart is drawn."""
        if self.process is None or self.pending is not None:
            return write_chart(summary, records, path)
        assert self.process.stdin is not None
        # The chart reads only these of each record.
        slim = [{"seconds": r.get("seconds"), "tokens": r.get("tokens")} for r in records]
        self.pending = path
        try:
            self.process.stdin.write(json.dumps(
                {"summary": summary, "records": slim, "path": str(path)}).encode())
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # the child is gone: `finish` says why
        return path

    def finish(self) -> None:
        """Waits for the child: the chart asked for is on disk when this returns, else
        ChartError says why. A child that was sent nothing just ends."""
        process, self.process = self.process, None
        if process is None:
            return
        assert process.stdin is not None and process.stderr is not None
        if not process.stdin.closed:
            process.stdin.close()
        try:
            process.wait(timeout=DRAW_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise ChartError(f"drawing {self.pending} took more than {DRAW_TIMEOUT:.0f} s") \
                from None
        finally:
            lines = process.stderr.read().decode(errors="replace").strip().splitlines()
            process.stderr.close()
        if self.pending is not None and (process.returncode != 0 or not self.pending.is_file()):
            raise ChartError(f"the chart process ended with status {process.returncode}: "
                             f"{lines[-1] if lines else 'no message'}")


def main(stdin: IO[str]) -> int:
    # Imported before the summary can arrive: this is the cost the child takes off the run.
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401

    text = stdin.read()
    if not text:  # the run ended without a chart to draw
        return 0
    request = cast(dict[str, Any], json.loads(text))
    path = Path(request["path"])
    partial = path.with_name(f"{path.stem}.partial{path.suffix}")
    # Written whole or not at all: a reader never sees half a PNG.
    try:
        if write_chart(request["summary"], request["records"], partial) is not None:
            os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.stdin))
