"""The report's charts: inline SVG drawn in Python (no script, no external resource).

- `hbar_chart`: horizontal stacked bars, one per row (changes by type, drift, principals).
- `broker_charts`: small multiples of replicas and leaders per broker, one per cluster.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _nice_max(value: float) -> int:
    """The axis end for counts up to `value`: four equal, whole, round steps (0, 2, 4, 6, 8 for 5;
    0, 80, ..., 320 for 250), never a fractional tick."""
    raw = max(float(value), 0.0) / 4
    exponent = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    for scale in (exponent, exponent * 10):
        for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
            step = m * scale
            if step >= raw and step == int(step):
                return 4 * int(step)
    return 4 * int(math.ceil(raw))  # pragma: no cover - the loop always answers


def fmt_count(n: float) -> str:
    n = float(n)
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M".replace(".0M", "M")
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{int(n)}" if n == int(n) else f"{n:.1f}"


def hbar_chart(rows: Sequence[tuple[str, Mapping[str, float]]], colors: Mapping[str, str], title: str,
               width: int = 760, bar: int = 18, label_width: int = 180) -> str:
    """A horizontal stacked bar chart as an inline <svg>: one bar per row, one segment per series."""
    series = list(colors)
    total_max = max((sum(values.get(s, 0) for s in series) for _, values in rows), default=0)
    top = _nice_max(total_max)
    plot = width - label_width - 70
    legend_h = 22
    height = legend_h + 26 + len(rows) * (bar + 6) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{_e(title)}" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" class="chart">',
           f'<title>{_e(title)}</title>']
    x = label_width
    for name in series:  # legend
        out.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{colors[name]}"/>'
                   f'<text x="{x + 16}" y="14" class="legend">{_e(name)}</text>')
        x += 24 + 7 * len(name)
    y0 = legend_h + 14
    for i in range(5):  # grid
        gx = label_width + plot * i / 4
        out.append(f'<line x1="{gx:.1f}" y1="{y0 - 4}" x2="{gx:.1f}" y2="{height - 20}" class="grid"/>'
                   f'<text x="{gx:.1f}" y="{height - 6}" class="axis" text-anchor="middle">{fmt_count(top * i / 4)}</text>')
    for n, (label, values) in enumerate(rows):
        y = y0 + n * (bar + 6)
        shown = label if len(label) <= 26 else label[:25] + "…"
        out.append(f'<text x="{label_width - 8}" y="{y + bar - 5}" class="label" text-anchor="end">'
                   f'<title>{_e(label)}</title>{_e(shown)}</text>')
        x = float(label_width)
        total = 0.0
        for name in series:
            value = float(values.get(name, 0) or 0)
            if value <= 0:
                continue
            w = plot * value / top
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{bar}" fill="{colors[name]}">'
                       f'<title>{_e(label)}: {_e(name)} {int(value)}</title></rect>')
            x += w
            total += value
        out.append(f'<text x="{x + 4:.1f}" y="{y + bar - 5}" class="value">{fmt_count(total)}</text>')
    if not rows:
        out.append(f'<text x="{label_width}" y="{y0 + 14}" class="label">nothing to show</text>')
    out.append("</svg>")
    return "".join(out)


def broker_charts(brokers: Sequence[Mapping[str, Any]], width: int = 250, height: int = 130) -> str:
    """Small multiples: per cluster, replicas (bar) and leaders (dark part) per broker."""
    by_cluster: dict[str, list[Mapping[str, Any]]] = {}
    for row in brokers:
        by_cluster.setdefault(str(row["cluster"]), []).append(row)
    parts = []
    for cluster, rows in sorted(by_cluster.items()):
        rows = sorted(rows, key=lambda r: (r["broker"] is None, r["broker"]))
        top = _nice_max(max((r["replicas"] or 0) for r in rows))
        n = len(rows)
        plot_w, plot_h = width - 40, height - 44
        bw = max(3.0, min(28.0, plot_w / max(n, 1) - 4))
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" class="chart small"><title>{_e(cluster)}: partitions per broker</title>',
               f'<text x="4" y="14" class="label">{_e(cluster)}</text>',
               f'<text x="{width - 4}" y="14" class="axis" text-anchor="end">max {fmt_count(top)}</text>']
        spread = [r["replicas"] or 0 for r in rows]
        if spread and max(spread) > 0:
            skew = (max(spread) - min(spread)) / max(spread)
            svg.append(f'<text x="{width - 4}" y="26" class="axis" text-anchor="end">skew {skew:.0%}</text>')
        for i, r in enumerate(rows):
            x = 30 + i * (plot_w / max(n, 1))
            h = plot_h * (r["replicas"] or 0) / top
            lh = plot_h * (r["leaders"] or 0) / top
            base = height - 18
            svg.append(f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bw:.1f}" height="{h:.1f}" fill="#90a4ae">'
                       f'<title>broker {_e(r["broker"])}: {r["replicas"]} replicas, {r["leaders"]} leaders</title></rect>'
                       f'<rect x="{x:.1f}" y="{base - lh:.1f}" width="{bw:.1f}" height="{lh:.1f}" fill="#37474f"/>')
            if n <= 16:
                svg.append(f'<text x="{x + bw / 2:.1f}" y="{height - 5}" class="axis" text-anchor="middle">'
                           f'{_e(r["broker"])}</text>')
        svg.append("</svg>")
        parts.append("".join(svg))
    return "".join(parts) or "<p>No partition data.</p>"

