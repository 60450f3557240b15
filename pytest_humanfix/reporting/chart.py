"""summary.svg: pass@1 per bug type with its interval, seconds and tokens per task, and with
repair rounds pass@1 within k rounds as a curve; `write_rounds_chart` draws several runs' curves
(`humanfix-report rounds`). Plain SVG written as text, marks carrying their figures as data-
attributes: why, in docs/reports.md ("The summary").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..atomic import write_atomically
from ..records import Record
from .sections import RoundRate, Summary, model_text
from .xmltext import xml_text

WIDTH, HEIGHT = 1300, 420
FONT = 12
# DejaVu Sans, the widest of the usual sans fonts, averages about this much of its size per
# character; text is laid out with this estimate because SVG cannot measure text before drawing.
CHAR_WIDTH = 0.6
BINS = 20

COLOURS = {"rate": "#4c72b0", "overall": "#c44e52", "seconds": "#55a868", "tokens": "#8172b2",
           "axis": "#333333", "grid": "#e5e5e5"}
# One colour per run on a chart of curves, in turn; past the last, the dashes change too.
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")
DASHES = ("", "6 3", "2 3", "8 3 2 3")
# A curve's points are labelled with their values up to this many rounds (past it they crowd).
LABELLED_ROUNDS = 10
# The tops the pass@1 axis of a curve chart may have: the least that holds every interval.
RATE_TOPS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)


# xml.sax.saxutils escapes the same, but importing it imports urllib.request (http.client,
# ssl, email): 10 to 25 ms here, ten times what drawing the chart takes.
def _text(content: object) -> str:
    return xml_text(content).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(value: object) -> str:
    """A quoted attribute value."""
    return '"' + _text(value).replace('"', "&quot;") + '"'


def _n(value: float) -> str:
    """A coordinate: short, and never NaN or infinite, which SVG renderers reject."""
    text = f"{value:.1f}" if math.isfinite(value) else "0"
    text = text.removesuffix(".0")
    return "0" if text == "-0" else text


def _unit(value: float | None) -> float:
    """A rate for the 0..1 axis: missing or non-finite values are drawn at 0."""
    if value is None or not math.isfinite(value):
        return 0.0
    return min(max(float(value), 0.0), 1.0)


def _fits(text: str, width: float, size: float = FONT) -> str:
    """The text, cut with an ellipsis where it would overflow `width` (the full text stays in
    the mark's <title>)."""
    most = max(int(width / (size * CHAR_WIDTH)), 1)
    return text if len(text) <= most else text[:max(most - 1, 0)] + "\u2026"


def _label(x: float, y: float, content: str, size: float = FONT, anchor: str = "middle",
           extra: str = "") -> str:
    return (f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" text-anchor="{anchor}"'
            f'{extra}>{_text(content)}</text>')


def _ticks(low: float, high: float, integer: bool = False, most: int = 6) -> list[float]:
    """Round tick values from low to high, 1, 2 or 5 times a power of ten apart: as many as
    fit in `most`."""
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return [low] if math.isfinite(low) else [0.0]
    power = 10 ** math.floor(math.log10(span / most))
    ticks: list[float] = []
    for step in (m * power for m in (1, 2, 5, 10, 20)):
        if integer and step < 1:
            continue
        first = math.ceil(low / step - 1e-9)
        last = math.floor(high / step + 1e-9)
        ticks = [round(i * step, 12) for i in range(first, last + 1)]
        if len(ticks) <= most:
            break
    return ticks or [low, high]  # no round step fits (an integer axis under 1 wide)


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    return f"{value:,.{decimals}f}"


def _histogram(values: list[float]) -> tuple[float, float, list[int]]:
    """Bin edges' range and counts of `BINS` equal bins, the last closed, as numpy's."""
    if not values:
        return 0.0, 1.0, [0] * BINS
    low, high = min(values), max(values)
    if high == low:  # one value (a single record, all zero seconds): it needs an axis still
        high = low + 1.0
    counts = [0] * BINS
    width = (high - low) / BINS
    for value in values:
        counts[min(int((value - low) / width), BINS - 1)] += 1
    return low, high, counts


def _tokens(record: Record) -> float:
    total = 0.0
    for value in (record.get("tokens") or {}).values():
        try:
            number = float(value or 0)
        except (TypeError, ValueError):
            continue
        total += number if math.isfinite(number) else 0.0
    return total if math.isfinite(total) else 0.0  # finite parts can still add up past it


def _seconds(record: Record) -> float:
    try:
        seconds = float(record.get("seconds") or 0)
    except (TypeError, ValueError):
        return 0.0
    return seconds if math.isfinite(seconds) else 0.0


def _rates_panel(summary: Summary, left: float, right: float, top: float,
                 bottom: float) -> list[str]:
    rows = summary["by_bug_type"]
    model = model_text(summary["run"]["model"])
    names = [f"{row['bug_type']} (n={row['scored']})" for row in rows]
    # The label column takes what the longest label needs, up to two fifths of the panel.
    label_width = min(max((len(name) for name in names), default=0) * FONT * CHAR_WIDTH,
                      (right - left) * 0.4)
    x0, x1 = left + label_width + 10, right
    y0, y1 = top + 28, bottom - 42

    def x(value: float) -> float:
        return x0 + (x1 - x0) * _unit(value)

    title = f"pass@1 per bug type: {model}"
    # Centred over the plot, as matplotlib's title was, unless it needs the whole panel.
    shown = _fits(title, right - left, FONT + 2)
    half = len(shown) * (FONT + 2) * CHAR_WIDTH / 2
    centre = max(min((x0 + x1) / 2, right - half), left + half)
    out = ['<g class="panel rates">',
           f'<g class="title"><title>{_text(title)}</title>',
           _label(centre, top + 14, shown, size=FONT + 2), "</g>"]
    for tick in _ticks(0.0, 1.0):
        out += [f'<line x1="{_n(x(tick))}" y1="{_n(y0)}" x2="{_n(x(tick))}" y2="{_n(y1)}" '
                f'stroke="{COLOURS["grid"]}"/>',
                f'<line x1="{_n(x(tick))}" y1="{_n(y1)}" x2="{_n(x(tick))}" y2="{_n(y1 + 4)}" '
                f'stroke="{COLOURS["axis"]}"/>',
                _label(x(tick), y1 + 17, f"{tick:.0%}")]
    out.append(_label((x0 + x1) / 2, bottom - 6, "pass@1 (bars: 95% Wilson interval)"))
    if not rows:
        out.append(_label((x0 + x1) / 2, (y0 + y1) / 2, "no tasks", extra=' fill="#777777"'))
    # The legend has a strip of its own below the bars, so it never hides a bar or a whisker.
    legend_strip = 30
    band = (y1 - y0 - legend_strip) / max(len(rows), 1)
    thickness = band * 0.8
    cap = min(thickness / 4, 5)
    for index, (row, name) in enumerate(zip(rows, names, strict=True)):
        value = _unit(row["pass_at_1"]["value"])
        low, high = (_unit(v) for v in row["pass_at_1"]["ci95"])
        middle = y0 + band * (index + 0.5)
        hover = (f"{row['bug_type']}: pass@1 {value:.1%} [{low:.1%}, {high:.1%}], "
                 f"{row['fixed']} fixed of {row['scored']} scored")
        out += [f'<g class="bar" data-bug-type={_attr(row["bug_type"])} '
                f'data-value="{value:.6f}" data-low="{low:.6f}" data-high="{high:.6f}">'
                f'<title>{_text(hover)}</title>',
                f'<rect x="{_n(x0)}" y="{_n(middle - thickness / 2)}" width="{_n(x(value) - x0)}"'
                f' height="{_n(thickness)}" fill="{COLOURS["rate"]}"/>',
                f'<path d="M{_n(x(low))} {_n(middle)}H{_n(x(high))}'
                f'M{_n(x(low))} {_n(middle - cap)}V{_n(middle + cap)}'
                f'M{_n(x(high))} {_n(middle - cap)}V{_n(middle + cap)}" '
                f'stroke="{COLOURS["axis"]}" stroke-width="1.5" fill="none"/>',
                _label(x0 - 6, middle + FONT * 0.35, _fits(name, label_width), anchor="end",
                       extra=' class="label"'),
                "</g>"]
    overall = _unit(summary["pass_at_1"]["value"])
    legend = f"all tasks {overall:.1%}"
    legend_width = len(legend) * FONT * CHAR_WIDTH + 44
    # On the side away from the dashed line, which it would otherwise cross.
    lx = x0 + 8 if overall > 0.5 else x1 - legend_width - 8
    ly = y1 - legend_strip + 4
    out += [f'<line class="overall" x1="{_n(x(overall))}" y1="{_n(y0)}" x2="{_n(x(overall))}" '
            f'y2="{_n(y1)}" stroke="{COLOURS["overall"]}" stroke-width="1.5" '
            f'stroke-dasharray="6 4"/>',
            f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(x1 - x0)}" height="{_n(y1 - y0)}" '
            f'fill="none" stroke="{COLOURS["axis"]}"/>',
            f'<g class="legend"><rect x="{_n(lx)}" y="{_n(ly)}" width="{_n(legend_width)}" '
            f'height="22" rx="3" fill="#ffffff" fill-opacity="0.85" stroke="#cccccc"/>',
            f'<line x1="{_n(lx + 8)}" y1="{_n(ly + 11)}" x2="{_n(lx + 32)}" y2="{_n(ly + 11)}" '
            f'stroke="{COLOURS["overall"]}" stroke-width="1.5" stroke-dasharray="6 4"/>',
            _label(lx + 38, ly + 15, legend, anchor="start", extra=' class="overall-label"'),
            "</g></g>"]
    return out


def _histogram_panel(kind: str, values: list[float], xlabel: str, ylabel: str | None,
                     left: float, right: float, top: float, bottom: float) -> list[str]:
    low, high, counts = _histogram(values)
    # Room on the right for half of a tick label as long as "100,000" under the axis's end.
    x0, x1 = left + 48, right - 24
    y0, y1 = top + 28, bottom - 42
    y_ticks = _ticks(0.0, max(max(counts), 1) * 1.05, integer=True, most=5)
    y_top = max(y_ticks[-1], max(counts) * 1.05, 1.0)

    def x(value: float) -> float:
        return x0 + (x1 - x0) * (value - low) / (high - low)

    def y(count: float) -> float:
        return y1 - (y1 - y0) * count / y_top

    out = [f'<g class="panel {kind}">']
    for tick in y_ticks:
        out += [f'<line x1="{_n(x0 - 4)}" y1="{_n(y(tick))}" x2="{_n(x0)}" y2="{_n(y(tick))}" '
                f'stroke="{COLOURS["axis"]}"/>',
                _label(x0 - 7, y(tick) + FONT * 0.35, f"{tick:.0f}", anchor="end")]
    # As many ticks as leave a gap of a character and a half between their labels.
    for most in range(6, 1, -1):
        x_ticks = _ticks(low, high, integer=kind == "tokens", most=most)
        longest = max(len(_tick_text(tick, x_ticks)) for tick in x_ticks)
        if (x1 - x0) / most >= (longest + 1.5) * FONT * CHAR_WIDTH:
            break
    for tick in x_ticks:
        out += [f'<line x1="{_n(x(tick))}" y1="{_n(y1)}" x2="{_n(x(tick))}" y2="{_n(y1 + 4)}" '
                f'stroke="{COLOURS["axis"]}"/>',
                _label(x(tick), y1 + 17, _tick_text(tick, x_ticks))]
    width = (high - low) / BINS
    for index, count in enumerate(counts):
        start = low + index * width
        out.append(f'<rect class="bin" data-count="{count}" x="{_n(x(start))}" '
                   f'y="{_n(y(count))}" width="{_n(x(start + width) - x(start))}" '
                   f'height="{_n(y1 - y(count))}" fill="{COLOURS[kind]}" stroke="#ffffff" '
                   f'stroke-width="0.5"><title>{count} task(s) from {start:.4g} to '
                   f'{start + width:.4g}</title></rect>')
    out += [f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(x1 - x0)}" height="{_n(y1 - y0)}" '
            f'fill="none" stroke="{COLOURS["axis"]}"/>',
            _label((x0 + x1) / 2, bottom - 6, xlabel)]
    if ylabel:
        out.append(_label(left + 10, (y0 + y1) / 2, ylabel,
                          extra=f' transform="rotate(-90 {_n(left + 10)} {_n((y0 + y1) / 2)})"'))
    out.append("</g>")
    return out


Curve = tuple[str, list[RoundRate]]


def _round_label(row: RoundRate) -> str:
    return f"r{row['round']} {_unit(row['value']):.1%}"


def _legend(name: str, rows: list[RoundRate]) -> str:
    """A curve's name, with where it ends: its run's pass@1."""
    return f"{name} ({_round_label(rows[-1])})" if rows else name


def _polyline(points: Sequence[tuple[float, float]]) -> str:
    return "M" + " L".join(f"{_n(px)} {_n(py)}" for px, py in points)


def _curves_panel(curves: Sequence[Curve], title: str, left: float, right: float, top: float,
                  bottom: float, legend_width: float = 0.0) -> list[str]:
    """pass@1 against repair rounds: per curve (a label and `summary.by_round`'s rows), a line
    through its points and a band over their 95% intervals; with `legend_width`, a legend of
    the curves in a column of that width on the right."""
    x0, x1 = left + 48, right - 16 - legend_width
    y0, y1 = top + 28, bottom - 42
    last = max((len(rows) - 1 for _, rows in curves), default=0)
    highs = [_unit(v) for _, rows in curves for row in rows
             for v in (row["value"], *row["ci95"])]
    top_value = next(t for t in RATE_TOPS if t >= min(max(highs, default=0.0), 1.0))
    # Round 0 and the last round sit inside the frame, not on it.
    pad = min(24.0, (x1 - x0) / 4)

    def x(k: float) -> float:
        return x0 + pad + (x1 - x0 - 2 * pad) * k / max(last, 1)

    def y(value: float | None) -> float:
        return y1 - (y1 - y0) * _unit(value) / top_value

    shown = _fits(title, right - left, FONT + 2)
    out = ['<g class="panel rounds">',
           f'<g class="title"><title>{_text(title)}</title>',
           _label((left + right) / 2, top + 14, shown, size=FONT + 2), "</g>"]
    y_ticks = _ticks(0.0, top_value, most=6)
    for tick in y_ticks:
        out += [f'<line x1="{_n(x0)}" y1="{_n(y(tick))}" x2="{_n(x1)}" y2="{_n(y(tick))}" '
                f'stroke="{COLOURS["grid"]}"/>',
                f'<line x1="{_n(x0 - 4)}" y1="{_n(y(tick))}" x2="{_n(x0)}" y2="{_n(y(tick))}" '
                f'stroke="{COLOURS["axis"]}"/>',
                _label(x0 - 7, y(tick) + FONT * 0.35, f"{tick:.0%}", anchor="end")]
    x_ticks = [float(k) for k in range(last + 1)] if last <= 12 else \
        _ticks(0.0, float(last), integer=True, most=12)
    for tick in x_ticks:
        out += [f'<line x1="{_n(x(tick))}" y1="{_n(y1)}" x2="{_n(x(tick))}" y2="{_n(y1 + 4)}" '
                f'stroke="{COLOURS["axis"]}"/>',
                _label(x(tick), y1 + 17, f"{tick:.0f}")]
    out += [f'<rect x="{_n(x0)}" y="{_n(y0)}" width="{_n(x1 - x0)}" height="{_n(y1 - y0)}" '
            f'fill="none" stroke="{COLOURS["axis"]}"/>',
            _label((x0 + x1) / 2, bottom - 6, "repair rounds k (0: the first attempt)"),
            _label(left + 10, (y0 + y1) / 2, "pass@1 within k rounds",
                   extra=f' transform="rotate(-90 {_n(left + 10)} {_n((y0 + y1) / 2)})"')]
    if not any(rows for _, rows in curves):
        out.append(_label((x0 + x1) / 2, (y0 + y1) / 2, "no tasks", extra=' fill="#777777"'))
    for number, (name, rows) in enumerate(curves):
        colour = PALETTE[number % len(PALETTE)]
        dash = DASHES[number // len(PALETTE) % len(DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        points = [(x(row["round"]), y(row["value"])) for row in rows]
        bounds = [[_unit(v) for v in row["ci95"]] for row in rows]
        band = [(px, y(high)) for (px, _), (_, high) in zip(points, bounds, strict=True)] + \
            [(px, y(low)) for (px, _), (low, _) in reversed(list(zip(points, bounds,
                                                                      strict=True)))]
        hover = f"{name}: " + " \u00b7 ".join(_round_label(row) for row in rows)
        out += [f'<g class="curve" data-label={_attr(name)} data-colour="{colour}">'
                f'<title>{_text(hover)}</title>']
        if points:
            out += [f'<path class="band" d="{_polyline(band)}Z" fill="{colour}" '
                    'fill-opacity="0.12" stroke="none"/>',
                    f'<path class="line" d="{_polyline(points)}" stroke="{colour}" '
                    f'stroke-width="2" fill="none"{dashed}/>']
        for row, (px, py), (low, high) in zip(rows, points, bounds, strict=True):
            value = _unit(row["value"])
            hover = (f"{name}: within {row['round']} round(s), pass@1 {value:.1%} "
                     f"[{low:.1%}, {high:.1%}], {row['fixed']} fixed over "
                     f"{row['tasks']} task(s)")
            out.append(
                f'<circle class="point" cx="{_n(px)}" cy="{_n(py)}" r="3.5" fill="{colour}" '
                f'data-round={_attr(row["round"])} data-value="{value:.6f}" '
                f'data-low="{low:.6f}" data-high="{high:.6f}" data-fixed={_attr(row["fixed"])}'
                f'><title>{_text(hover)}</title></circle>')
            if len(curves) == 1 and last <= LABELLED_ROUNDS:
                out.append(_label(px, py - 8, f"{value:.1%}", size=FONT - 1,
                                  extra=' class="point-label"'))
        out.append("</g>")
    if legend_width:
        lx = right - legend_width
        out.append('<g class="legend">')
        for number, (name, rows) in enumerate(curves):
            colour = PALETTE[number % len(PALETTE)]
            dash = DASHES[number // len(PALETTE) % len(DASHES)]
            ly = y0 + 8 + 20 * number
            out += [f'<line x1="{_n(lx)}" y1="{_n(ly)}" x2="{_n(lx + 24)}" y2="{_n(ly)}" '
                    f'stroke="{colour}" stroke-width="2"'
                    + (f' stroke-dasharray="{dash}"' if dash else "") + "/>",
                    _label(lx + 30, ly + FONT * 0.35,
                           _fits(_legend(name, rows), legend_width - 30),
                           anchor="start", extra=' class="legend-label"')]
        out.append("</g>")
    out.append("</g>")
    return out


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" font-family="DejaVu Sans, Helvetica, Arial, '
        f'sans-serif" fill="#222222">',
        f"<title>{_text(title)}</title>",
        f'<rect width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>',
        *body, "</svg>", ""])


def render(summary: Summary, records: list[Record]) -> str:
    """The chart's SVG text."""
    # The panels share the width 1.6 : 1 : 1, as the matplotlib figure did; a run with repair
    # rounds adds its curve, the chart growing wider rather than the others narrower.
    rounds = summary["by_round"]
    weights = [1.6, 1.0, 1.0, *([1.2] if len(rounds) > 1 else [])]
    unit = (WIDTH - 20) / 3.6
    edges = [10.0]
    for weight in weights:
        edges.append(edges[-1] + unit * weight)
    top, bottom = 8.0, HEIGHT - 4.0
    model = model_text(summary["run"]["model"])
    body = [
        *_rates_panel(summary, edges[0], edges[1] - 20, top, bottom),
        *_histogram_panel("seconds", [_seconds(r) for r in records], "seconds per task",
                          "tasks", edges[1], edges[2] - 10, top, bottom),
        *_histogram_panel("tokens", [_tokens(r) for r in records],
                          "tokens per task (prompt + completion)", None, edges[2],
                          edges[3] - (10 if len(weights) > 3 else 0), top, bottom)]
    if len(weights) > 3:
        body += _curves_panel([(model, rounds)], "pass@1 within k repair rounds",
                              edges[3] + 10, edges[4], top, bottom)
    return _svg(edges[-1] + 10, HEIGHT, f"humanfix summary: {model}", body)


def render_rounds(curves: Sequence[Curve]) -> str:
    """The SVG text of several runs' pass@1 within k repair rounds, one curve each."""
    longest = max((len(_legend(name, rows)) for name, rows in curves), default=0)
    legend_width = min(longest * FONT * CHAR_WIDTH + 40, 420.0)
    # Taller when the legend needs it: one line a curve.
    width, height = 640 + legend_width, max(440.0, 110.0 + 20 * len(curves))
    title = "pass@1 within k repair rounds"
    return _svg(width, height, f"humanfix: {title}", _curves_panel(
        curves, title, 10, width - 10, 8, height - 4, legend_width))


def write_rounds_chart(curves: Sequence[Curve], path: Path) -> Path:
    """Writes `render_rounds`'s chart at `path`, whole or not at all."""
    return write_atomically(path, render_rounds(curves))


def write_chart(summary: Summary, records: list[Record], path: Path) -> Path:
    """Writes the chart at `path`, whole or not at all: a reader never sees half a file."""
    return write_atomically(path, render(summary, records))
