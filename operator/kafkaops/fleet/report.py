"""report.html and summary.md from small aggregates (pure Python: no Spark needed to render or read them).

The HTML page is self-contained: inline CSS and inline SVG charts drawn here, no script, no
external resource, so it opens from a CI artifact or a mail attachment as it is. The Markdown
summary is for CI logs and pull-request comments.

`ReportData` holds only what the driver collected: per-cluster counts, per-broker partition
counts, the top principals, and the first rows of each output as samples.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ACTIONS = ("create", "update", "partition-increase", "replica-change", "delete")
ACTION_COLORS = {"create": "#2e7d32", "update": "#1565c0", "partition-increase": "#6a1b9a",
                 "replica-change": "#ef6c00", "delete": "#c62828", "problem": "#424242"}
ACCESS_COLORS = {"read": "#0277bd", "write": "#d84315"}
SAMPLE_ROWS = 25


@dataclass
class ReportData:
    title: str = "kafkaops fleet plan"
    generated_at: str = ""
    inputs: dict[str, str] = field(default_factory=dict)  # label -> value (paths, master, options)
    stages: list[tuple[str, float, str]] = field(default_factory=list)  # (stage, seconds, detail)
    clusters: list[dict[str, Any]] = field(default_factory=list)  # one dict per cluster (see CLUSTER_KEYS)
    problems: list[dict[str, Any]] = field(default_factory=list)  # input problems: stage, file, rule, message, cluster
    issues: dict[str, int] = field(default_factory=dict)  # validation issues: errors, warnings, invalid documents
    issue_samples: list[dict[str, Any]] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)  # cluster, broker, replicas, leaders
    principals: list[dict[str, Any]] = field(default_factory=list)  # principal, read, write, clusters
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # output -> first rows
    totals: dict[str, int] = field(default_factory=dict)  # output -> rows
    notes: list[str] = field(default_factory=list)
    access_from: str = "observed"


# cluster dict keys: cluster, snapshot (taken at), brokers, desired_topics, observed_topics, plan (action -> count),
# problems (plan problems), drift, orphan_topics, orphan_acls, policy_errors, policy_warnings, access, status, notes


# --- SVG --------------------------------------------------------------------------------------------------------


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


def _fmt(n: float) -> str:
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
                   f'<text x="{gx:.1f}" y="{height - 6}" class="axis" text-anchor="middle">{_fmt(top * i / 4)}</text>')
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
        out.append(f'<text x="{x + 4:.1f}" y="{y + bar - 5}" class="value">{_fmt(total)}</text>')
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
               f'<text x="{width - 4}" y="14" class="axis" text-anchor="end">max {_fmt(top)}</text>']
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


# --- HTML ---------------------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#212121;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#616161;font-size:13px} table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #e0e0e0;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600;white-space:nowrap} td.n{white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums} .bad{color:#c62828;font-weight:600} .ok{color:#2e7d32}
.warn{color:#ef6c00} .cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid #e0e0e0;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:20px} .card span{font-size:12px;color:#616161}
td{max-width:560px;overflow-wrap:break-word} .scroll{overflow-x:auto}
svg.chart{display:block;margin:6px 0} svg.small{display:inline-block;margin:4px;border:1px solid #eee}
svg text{font-family:system-ui,sans-serif} .legend,.label{font-size:12px;fill:#212121}
.axis,.value{font-size:10px;fill:#616161} .grid{stroke:#eee} code{font-size:12px}
details{margin:6px 0} summary{cursor:pointer}
"""


LABELS = {"desired_topics": "desired topics", "observed_topics": "observed topics", "partition-increase": "partitions+",
          "replica-change": "replicas", "problems": "refused", "orphan_topics": "orphan topics",
          "orphan_acls": "orphan ACLs", "policy_errors": "policy errors", "policy_warnings": "policy warnings",
          "access": "access rows", "snapshot": "snapshot taken"}


def _table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str], numeric: Iterable[str] = ()) -> str:
    numbers = set(numeric)
    head = "".join(f"<th>{_e(LABELS.get(c, c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c)
            text = "" if value is None else (", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value)
            cells.append(f'<td class="n">{_e(text)}</td>' if c in numbers else f"<td>{_e(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<div class=\"scroll\"><table><tr>{head}</tr>{''.join(body)}</table></div>"


def _sum(clusters: Sequence[Mapping[str, Any]], key: str) -> int:
    return sum(int(c.get(key) or 0) for c in clusters)


def _plan_total(cluster: Mapping[str, Any]) -> int:
    return sum(int((cluster.get("plan") or {}).get(a, 0)) for a in ACTIONS)


def render_html(data: ReportData) -> str:
    clusters = data.clusters
    changes = sum(_plan_total(c) for c in clusters)
    cards = [("clusters", len(clusters)), ("changes", changes), ("refused", _sum(clusters, "problems")),
             ("drifted values", _sum(clusters, "drift")), ("orphan topics", _sum(clusters, "orphan_topics")),
             ("orphan ACLs", _sum(clusters, "orphan_acls")), ("policy errors", _sum(clusters, "policy_errors")),
             ("invalid manifests", data.issues.get("invalid_documents", 0)), ("input problems", len(data.problems))]
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(data.title)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{_e(data.title)}</h1><div class=\"meta\">generated {_e(data.generated_at)}"
           + "".join(f" · {_e(k)}: <code>{_e(v)}</code>" for k, v in data.inputs.items()) + "</div>",
           "<div class=\"cards\">" + "".join(
               f'<div class="card"><b class="{"bad" if v and k in ("refused", "policy errors", "invalid manifests", "input problems") else ""}">'
               f"{_fmt(v)}</b><span>{_e(k)}</span></div>" for k, v in cards) + "</div>"]
    if data.problems:
        out.append("<h2>Input problems</h2><p>These inputs were skipped; everything else was processed.</p>")
        out.append(_table(data.problems, ["stage", "cluster", "file", "rule", "message"]))
    out.append("<h2>Clusters</h2>")
    columns = ["cluster", "status", "brokers", "desired_topics", "observed_topics", *ACTIONS, "problems", "drift",
               "orphan_topics", "orphan_acls", "policy_errors", "access"]
    rows = [{**c, **{a: (c.get("plan") or {}).get(a, 0) for a in ACTIONS}} for c in clusters]
    out.append(_table(rows, columns, numeric=columns[2:]))
    taken = sorted({c["snapshot"] for c in clusters if c.get("snapshot")})
    if taken:
        out.append(f'<p class="meta">Snapshots taken {_e(taken[0])}' + (f" to {_e(taken[-1])}" if len(taken) > 1 else "")
                   + ".</p>")
    notes = [f"{c['cluster']}: {n}" for c in clusters for n in c.get("notes") or ()]
    if notes:
        out.append("<details><summary>Planner notes</summary><ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes)
                   + "</ul></details>")
    out.append("<h2>Changes by type</h2>")
    out.append(hbar_chart([(c["cluster"], {**(c.get("plan") or {}), "problem": c.get("problems", 0)}) for c in clusters],
                          ACTION_COLORS, "Changes by type, per cluster"))
    out.append("<h2>Drift by cluster</h2>")
    out.append(hbar_chart([(c["cluster"], {"drifted values": c.get("drift", 0), "orphan topics": c.get("orphan_topics", 0),
                                           "orphan ACL bindings": c.get("orphan_acls", 0)}) for c in clusters],
                          {"drifted values": "#ef6c00", "orphan topics": "#8d6e63", "orphan ACL bindings": "#bcaaa4"},
                          "Drift and orphans per cluster"))
    out.append("<h2>Partitions per broker</h2><p class=\"meta\">Replicas per broker (grey) and the leaders among "
               "them (dark), from the snapshots; skew = (max - min) / max.</p>")
    out.append(broker_charts(data.brokers))
    out.append(f"<h2>Top principals by access</h2><p class=\"meta\">Topics each principal can read or write "
               f"(effective access from the {_e(data.access_from)} ACLs, across clusters).</p>")
    out.append(hbar_chart([(p["principal"], {"read": p.get("read", 0), "write": p.get("write", 0)})
                           for p in data.principals], ACCESS_COLORS, "Top principals by access"))
    if data.issues.get("errors") or data.issues.get("warnings"):
        out.append(f"<h2>Manifest issues</h2><p>{data.issues.get('errors', 0)} error(s), "
                   f"{data.issues.get('warnings', 0)} warning(s) in {data.issues.get('invalid_documents', 0)} "
                   "invalid document(s); invalid documents are left out of every output.</p>")
        out.append(_table(data.issue_samples, ["severity", "file", "index", "kind", "name", "path", "rule", "message"]))
    for name, columns in (("plan", ["cluster", "kind", "name", "action", "change", "problem_reason"]),
                          ("drift", ["cluster", "kind", "name", "field", "desired", "observed"]),
                          ("orphans", ["cluster", "kind", "name", "detail"]),
                          ("policy", ["cluster", "kind", "name", "state", "rule", "severity", "message"])):
        sample = data.samples.get(name) or []
        total = data.totals.get(name, len(sample))
        out.append(f"<h2>{_e(name)}</h2><p class=\"meta\">{total} row(s) in <code>{_e(name)}/</code>"
                   + (f"; the first {len(sample)} below" if total > len(sample) else "") + "</p>")
        if sample:
            out.append(_table(sample, columns))
    out.append("<h2>Run</h2>")
    out.append(_table([{"stage": s, "seconds": f"{t:.1f}", "detail": d} for s, t, d in data.stages],
                      ["stage", "seconds", "detail"], numeric=["seconds"]))
    for note in data.notes:
        out.append(f"<p class=\"meta\">{_e(note)}</p>")
    out.append("</body></html>")
    return "\n".join(out)


# --- Markdown -------------------------------------------------------------------------------------------------------


def _md(value: Any) -> str:
    text = "" if value is None else (", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_md(r.get(c)) for c in columns) + " |" for r in rows]
    return lines


def render_markdown(data: ReportData) -> str:
    clusters = data.clusters
    changes = sum(_plan_total(c) for c in clusters)
    lines = [f"# {data.title}", "",
             f"{len(clusters)} cluster(s): **{changes} change(s)**, {_sum(clusters, 'problems')} refused, "
             f"{_sum(clusters, 'drift')} drifted value(s), {_sum(clusters, 'orphan_topics')} orphan topic(s), "
             f"{_sum(clusters, 'orphan_acls')} orphan ACL binding(s), {_sum(clusters, 'policy_errors')} policy "
             f"error(s), {data.issues.get('invalid_documents', 0)} invalid manifest(s), {len(data.problems)} input "
             "problem(s).", ""]
    if data.problems:
        lines += ["## Input problems (skipped)", ""]
        lines += [f"- `{p['file']}`: {p['message']} ({p['rule']})" for p in data.problems]
        lines.append("")
    lines += ["## Clusters", ""]
    columns = ["cluster", "status", *ACTIONS, "problems", "drift", "orphan_topics", "orphan_acls", "policy_errors"]
    lines += _md_table([{**c, **{a: (c.get("plan") or {}).get(a, 0) for a in ACTIONS}} for c in clusters], columns)
    if data.issue_samples:
        lines += ["", "## Manifest issues", ""]
        lines += [f"- {i['severity']}: `{i['file']}[{i['index']}]` {i.get('path') or ''}: {i['message']} ({i['rule']})"
                  for i in data.issue_samples[:10]]
    if data.principals:
        lines += ["", "## Top principals by access", ""]
        lines += _md_table(data.principals[:10], ["principal", "read", "write", "clusters"])
    lines += ["", "## Run", ""]
    lines += [f"- {s}: {t:.1f} s{f' ({d})' if d else ''}" for s, t, d in data.stages]
    lines += [f"- {k}: `{v}`" for k, v in data.inputs.items()]
    return "\n".join(lines) + "\n"
