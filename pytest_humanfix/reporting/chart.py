"""summary.png: pass@1 per bug type with its interval, and seconds and tokens per task.

matplotlib is optional (the `charts` extra); without it no chart is drawn. The object API with
an Agg canvas is used instead of pyplot, so no global backend or figure state is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


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
