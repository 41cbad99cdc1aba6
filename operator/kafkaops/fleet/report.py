"""report.html from small aggregates and the first findings (pure Python: no Spark to render or read it).

One self-contained page that works offline (a CI artifact, a mail attachment): inline CSS, inline
SVG charts (charts.py) and a small inline script, nothing fetched. People open it to decide what
to fix first:

- a table of contents with the count of every section;
- tables (clusters, input problems, changes, drift, orphans, policy findings, principals with their
  credential, quotas and ACLs - never a secret -, manifest issues)
  that sort by any column (click or Enter on its header) and filter as one types (every word
  must occur in the row); without script they are still plain, readable tables;
- every finding links to the manifest file that declares it, with the line (`payments.yaml:12`,
  a link relative to report.html), and to its cluster's row, which links to the snapshot;
- durations and sizes read in human units beside the raw value (`604800000 (7 days)`);
- policy findings sorted by severity, one row per finding (seen in both states: `desired +
  observed`), and every problem with its reason.

`ReportData` holds only what the driver collected (findings.py shapes the rows);
summary.md is summary.py's.
"""

from __future__ import annotations

import html
import os
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkaops.fleet.charts import broker_charts, fmt_count, hbar_chart
from kafkaops.fleet.hadoopfs import local_path

ACTIONS = ("create", "update", "partition-increase", "replica-change", "delete")
ACTION_COLORS = {"create": "#2e7d32", "update": "#1565c0", "partition-increase": "#6a1b9a",
                 "replica-change": "#ef6c00", "delete": "#c62828", "problem": "#424242"}
ACCESS_COLORS = {"read": "#0277bd", "write": "#d84315"}


@dataclass
class ReportData:
    title: str = "kafkaops fleet plan"
    generated_at: str = ""
    inputs: dict[str, str] = field(default_factory=dict)  # label -> value (paths, master, options)
    stages: list[tuple[str, float, str]] = field(default_factory=list)  # (stage, seconds, detail)
    clusters: list[dict[str, Any]] = field(default_factory=list)  # one dict per cluster (see CLUSTER_KEYS)
    problems: list[dict[str, Any]] = field(default_factory=list)  # input problems: stage, file, rule, message, cluster
    issues: dict[str, int] = field(default_factory=dict)  # validation issues: errors, warnings, invalid documents
    brokers: list[dict[str, Any]] = field(default_factory=list)  # cluster, broker, replicas, leaders
    principals: list[dict[str, Any]] = field(default_factory=list)  # principal, read, write, clusters
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # findings.py rows: plan, drift, ...
    totals: dict[str, int] = field(default_factory=dict)  # rows in each output (policy: findings after merging)
    notes: list[str] = field(default_factory=list)
    access_from: str = "observed"
    report_dir: str | None = None  # the local directory of report.html: links are relative to it
    cwd: str | None = None  # manifest paths are shown relative to it
    snapshots: dict[str, str] = field(default_factory=dict)  # cluster -> its snapshot header file


# cluster dict keys: cluster, snapshot (taken at), brokers, desired_topics, observed_topics, plan (action -> count),
# problems (plan problems), drift, orphan_topics, orphan_acls, policy_errors, policy_warnings, access, status, notes

STATUS_REASONS = {
    "ok": "",
    "no snapshot": "declared in the manifests, but no snapshot of it was given: not planned",
    "snapshot rejected": "its snapshot was skipped (see Input problems): not planned",
    "not declared": "a snapshot of a cluster no manifest declares: everything in it is an orphan",
}


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _sum(clusters: Sequence[Mapping[str, Any]], key: str) -> int:
    return sum(int(c.get(key) or 0) for c in clusters)


def plan_total(cluster: Mapping[str, Any]) -> int:
    return sum(int((cluster.get("plan") or {}).get(a, 0)) for a in ACTIONS)


# --- links ----------------------------------------------------------------------------------------------------------


def shown_path(path: str, cwd: str | None) -> str:
    """A manifest path as people type it: relative to the working directory when under it."""
    local = local_path(path)
    if local is None or cwd is None:
        return path
    relative = os.path.relpath(os.path.abspath(local), cwd)
    return path if relative.startswith("..") else relative


def href_to(path: str | None, report_dir: str | None) -> str | None:
    """A link from report.html to a local file (relative, so the pair can move together)."""
    if not path or report_dir is None or (local := local_path(path)) is None:
        return None
    return urllib.parse.quote(os.path.relpath(os.path.abspath(local), report_dir).replace(os.sep, "/"))


def cluster_anchor(name: Any) -> str:
    return f"cluster-{name}"


# --- tables ---------------------------------------------------------------------------------------------------------

Cell = Callable[[Mapping[str, Any], "ReportData"], tuple[str, str | None]]  # -> (inner html, sort key)


def _text(key: str) -> Cell:
    return lambda row, data: (_e(_joined(row.get(key))), None)


def _joined(value: Any) -> str:
    return "" if value is None else ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _number(key: str) -> Cell:
    """An exact count with thousands separators (1,234,567), sorted as a number."""
    def cell(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
        value = row.get(key)
        if value is None:
            return "", ""
        return (_e(f"{value:,}") if isinstance(value, int) else _e(value)), str(value)
    return cell


def _cluster(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
    name = row.get("cluster")
    if name is None:
        return "", ""
    if not _cluster_of(data, name):  # e.g. the skipped snapshot of a cluster no manifest declares
        return _e(name), str(name)
    return f'<a href="#{_e(urllib.parse.quote(cluster_anchor(name)))}">{_e(name)}</a>', str(name)


def _manifest(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
    file = row.get("file")
    if not file:
        return "", ""
    line = row.get("line")
    shown = shown_path(file, data.cwd) + (f":{line}" if line else "")
    link = href_to(file, data.report_dir)
    key = f"{shown_path(file, data.cwd)}:{int(line or 0):08d}"
    if link is None:
        return f"<code>{_e(shown)}</code>", key
    return f'<a class="manifest" href="{_e(link)}" title="{_e(file)}">{_e(shown)}</a>', key


def _snapshot(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
    name = row.get("cluster")
    header = data.snapshots.get(name) if name is not None else None
    if header is None:
        return "", ""
    taken = row.get("snapshot") or _cluster_of(data, name).get("snapshot") or "snapshot"
    link = href_to(header, data.report_dir)
    text = _e(taken)
    return (f'<a class="snapshot" href="{_e(link)}" title="{_e(header)}">{text}</a>' if link else text), str(taken)


def _cluster_of(data: ReportData, name: Any) -> Mapping[str, Any]:
    return next((c for c in data.clusters if c.get("cluster") == name), {})


def _severity(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
    value = row.get("severity") or ""
    css = {"error": "bad", "warning": "warn"}.get(value, "")
    return f'<span class="{css}">{_e(value)}</span>', {"error": "0", "warning": "1"}.get(value, "2")


def _action(row: Mapping[str, Any], data: ReportData) -> tuple[str, str | None]:
    value = row.get("action") or ""
    css = "bad" if value == "refused" else ""
    return f'<span class="{css}">{_e(value)}</span>', None


COLUMNS: dict[str, list[tuple[str, Cell, bool]]] = {  # table -> (label, cell, numeric)
    "problems": [("cluster", _cluster, False), ("stage", _text("stage"), False), ("file", _manifest, False),
                 ("rule", _text("rule"), False), ("reason", _text("message"), False)],
    "clusters": [("cluster", _text("cluster"), False), ("status", _text("status"), False),
                 ("reason", _text("reason"), False), ("snapshot", _snapshot, False),
                 ("brokers", _number("brokers"), True), ("desired topics", _number("desired_topics"), True),
                 ("observed topics", _number("observed_topics"), True),
                 *((a if a not in ("partition-increase", "replica-change") else
                    {"partition-increase": "partitions+", "replica-change": "replicas"}[a], _number(a), True)
                   for a in ACTIONS),
                 ("refused", _number("problems"), True), ("drift", _number("drift"), True),
                 ("orphan topics", _number("orphan_topics"), True), ("orphan ACLs", _number("orphan_acls"), True),
                 ("policy errors", _number("policy_errors"), True),
                 ("policy warnings", _number("policy_warnings"), True), ("access rows", _number("access"), True)],
    "plan": [("cluster", _cluster, False), ("kind", _text("kind"), False), ("name", _text("name"), False),
             ("action", _action, False), ("change", _text("change"), False), ("reason", _text("reason"), False),
             ("manifest", _manifest, False)],
    "drift": [("cluster", _cluster, False), ("kind", _text("kind"), False), ("name", _text("name"), False),
              ("field", _text("field"), False), ("manifest says", _text("desired"), False),
              ("cluster has", _text("observed"), False), ("reason", _text("reason"), False),
              ("manifest", _manifest, False)],
    "orphans": [("cluster", _cluster, False), ("kind", _text("kind"), False), ("name", _text("name"), False),
                ("detail", _text("detail"), False), ("reason", _text("reason"), False),
                ("snapshot", _snapshot, False)],
    "policy": [("severity", _severity, False), ("cluster", _cluster, False), ("kind", _text("kind"), False),
               ("name", _text("name"), False), ("rule", _text("rule"), False), ("state", _text("state"), False),
               ("reason", _text("reason"), False), ("manifest", _manifest, False)],
    "principals": [("cluster", _cluster, False), ("principal", _text("principal"), False),
                   ("credential", _text("credential"), False), ("declared credential", _text("declared"), False),
                   ("quotas", _text("quotas"), False), ("declared quotas", _text("declared_quotas"), False),
                   ("ACLs", _number("acl_count"), True), ("bindings", _text("acls"), False),
                   ("manifest", _manifest, False)],
    "issues": [("severity", _severity, False), ("manifest", _manifest, False), ("kind", _text("kind"), False),
               ("name", _text("name"), False), ("field", _text("path"), False), ("rule", _text("rule"), False),
               ("reason", _text("reason"), False)],
}


def data_table(name: str, rows: Sequence[Mapping[str, Any]], data: ReportData,
               row_id: Callable[[Mapping[str, Any]], str] | None = None) -> str:
    """A sortable, filterable table (`table.data`, id `t-<name>`), with its filter box."""
    columns = COLUMNS[name]
    head = "".join(f'<th scope="col"{" class=n" if numeric else ""}>{_e(label)}</th>' for label, _, numeric in columns)
    body = []
    for row in rows:
        cells = []
        for _, cell, numeric in columns:
            inner, key = cell(row, data)
            attrs = (' class="n"' if numeric else "") + (f' data-sort="{_e(key)}"' if key is not None else "")
            cells.append(f"<td{attrs}>{inner}</td>")
        rid = f' id="{_e(row_id(row))}"' if row_id else ""
        body.append(f"<tr{rid}>" + "".join(cells) + "</tr>")
    tools = (f'<div class="tools"><input type="search" data-filter="t-{name}" placeholder="filter: words in the row" '
             f'aria-label="filter {_e(name)}"> <span class="meta" data-shown="t-{name}">{len(rows)} rows</span></div>')
    return (f'{tools}<div class="scroll"><table class="data" id="t-{name}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


# --- the page -------------------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#212121;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#616161;font-size:13px} table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #e0e0e0;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f5f5f5;font-weight:600;white-space:nowrap} th.n,td.n{text-align:right}
td.n{white-space:nowrap;font-variant-numeric:tabular-nums} .bad{color:#c62828;font-weight:600} .ok{color:#2e7d32}
.warn{color:#ef6c00} .cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.card{border:1px solid #e0e0e0;border-radius:6px;padding:8px 14px;min-width:110px}
a.card{color:inherit;text-decoration:none} .card b{display:block;font-size:20px} .card span{font-size:12px;color:#616161}
td{max-width:520px;overflow-wrap:anywhere} .scroll{overflow-x:auto}
table.data th{cursor:pointer;user-select:none} table.data th::after{content:" \\2195";color:#bdbdbd}
table.data th[aria-sort=ascending]::after{content:" \\25B2";color:#424242}
table.data th[aria-sort=descending]::after{content:" \\25BC";color:#424242}
tr:target{background:#fff8e1} .tools{margin:6px 0} .tools input{font-size:13px;padding:2px 6px;width:280px}
nav.toc ol{columns:3;font-size:13px;margin:6px 0;padding-left:20px} nav.toc a{text-decoration:none}
svg.chart{display:block;margin:6px 0} svg.small{display:inline-block;margin:4px;border:1px solid #eee}
svg text{font-family:system-ui,sans-serif} .legend,.label{font-size:12px;fill:#212121}
.axis,.value{font-size:10px;fill:#616161} .grid{stroke:#eee} code{font-size:12px}
details{margin:6px 0} summary{cursor:pointer} h3{font-size:15px;margin:18px 0 6px} a.snapshot{white-space:nowrap}
"""

# Sorting (click or Enter on a header: ascending, then descending; numbers as numbers, text in natural
# order) and filtering (every word typed must occur in the row). Cells may carry data-sort.
_SCRIPT = """
(function () {
  function key(cell) { var v = cell.getAttribute('data-sort'); return v !== null ? v : cell.textContent.trim(); }
  function num(v) { return v !== '' && isFinite(v) ? parseFloat(v) : null; }
  Array.prototype.forEach.call(document.querySelectorAll('table.data'), function (table) {
    var body = table.tBodies[0], heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, i) {
      th.tabIndex = 0;
      th.setAttribute('aria-sort', 'none');
      function sort() {
        var ascending = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(heads, function (h) { h.setAttribute('aria-sort', 'none'); });
        th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
        var rows = Array.prototype.slice.call(body.rows);
        var numeric = rows.every(function (r) { var v = key(r.cells[i]); return v === '' || num(v) !== null; });
        rows.sort(function (a, b) {
          var x = key(a.cells[i]), y = key(b.cells[i]), c;
          if (numeric) { c = (num(x) === null ? -Infinity : num(x)) - (num(y) === null ? -Infinity : num(y)); }
          else { c = x.localeCompare(y, undefined, {numeric: true}); }
          return ascending ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); }
      });
    });
    var input = document.querySelector('input[data-filter="' + table.id + '"]');
    var shown = document.querySelector('[data-shown="' + table.id + '"]');
    if (!input) { return; }
    input.addEventListener('input', function () {
      var words = input.value.toLowerCase().split(/\\s+/).filter(Boolean), n = 0;
      Array.prototype.forEach.call(body.rows, function (r) {
        var text = r.textContent.toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
        r.hidden = !keep;
        if (keep) { n += 1; }
      });
      if (shown) { shown.textContent = n + ' of ' + body.rows.length + ' rows'; }
    });
  });
})();
"""

SECTION_TITLES = {"problems": "Input problems", "clusters": "Clusters", "plan": "Changes", "drift": "Drift",
                  "orphans": "Orphans", "policy": "Policy findings", "principals": "Principals",
                  "issues": "Manifest issues",
                  "charts": "Charts", "run": "Run"}
SECTION_INTROS = {
    "plan": "What <code>kafkaops apply</code> would do, per resource; refused changes first.",
    "drift": "Declared values that differ in the cluster (resources that exist there).",
    "orphans": "Topics and ACL bindings a cluster has and no manifest declares.",
    "policy": "Violations of the policy rules, errors first; a finding in both the manifests and the cluster is one "
              "row (state <code>desired + observed</code>).",
    "principals": "Every principal a KafkaUser or a KafkaAcl declares or a cluster knows (a SCRAM credential, quotas of "
                  "<code>user=&lt;name&gt;</code>, ACL bindings), with what the cluster holds beside what the manifest "
                  "declares. Credentials show their mechanism and iterations only: no password or hash is ever read.",
    "issues": "Invalid documents are left out of every output.",
}


def _cards(data: ReportData) -> str:
    clusters = data.clusters
    cards = [("clusters", len(clusters), "clusters"), ("changes", sum(plan_total(c) for c in clusters), "plan"),
             ("refused", _sum(clusters, "problems"), "plan"), ("drifted values", _sum(clusters, "drift"), "drift"),
             ("orphan topics", _sum(clusters, "orphan_topics"), "orphans"),
             ("orphan ACLs", _sum(clusters, "orphan_acls"), "orphans"),
             ("policy errors", _sum(clusters, "policy_errors"), "policy"),
             ("invalid manifests", data.issues.get("invalid_documents", 0), "issues"),
             ("input problems", len(data.problems), "problems")]
    bad = ("refused", "policy errors", "invalid manifests", "input problems")
    return '<div class="cards">' + "".join(
        f'<a class="card" href="#{target}"><b class="{"bad" if v and k in bad else ""}">{fmt_count(v)}</b>'
        f"<span>{_e(k)}</span></a>" for k, v, target in cards) + "</div>"


def _section(key: str, count: int | None, shown: int | None = None) -> str:
    more = f" (the first {shown} of {count}; all rows in <code>{key}/</code>)" if shown is not None and count and \
        count > shown else ""
    number = f" <span class=\"meta\">({fmt_count(count)})</span>" if count is not None else ""
    intro = SECTION_INTROS.get(key, "")
    return f'<h2 id="{key}">{_e(SECTION_TITLES[key])}{number}</h2>' + (
        f'<p class="meta">{intro}{more}</p>' if intro or more else "")


def sections(data: ReportData) -> list[tuple[str, int | None]]:
    """(section, count) in page order: the table of contents."""
    out: list[tuple[str, int | None]] = []
    if data.problems:
        out.append(("problems", len(data.problems)))
    out.append(("clusters", len(data.clusters)))
    for key in ("plan", "drift", "orphans", "policy", "principals"):
        if key == "principals" and "principals" not in data.tables:
            continue
        out.append((key, data.totals.get(key, len(data.tables.get(key) or []))))
    if data.tables.get("issues"):
        out.append(("issues", data.issues.get("errors", 0) + data.issues.get("warnings", 0)))
    out += [("charts", None), ("run", len(data.stages))]
    return out


def render_html(data: ReportData) -> str:
    clusters = data.clusters
    toc = sections(data)
    out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(data.title)}</title>'
           f"<style>{_CSS}</style></head><body>",
           f'<h1>{_e(data.title)}</h1><div class="meta">generated {_e(data.generated_at)}'
           + "".join(f" · {_e(k)}: <code>{_e(v)}</code>" for k, v in data.inputs.items()) + "</div>",
           _cards(data),
           '<nav class="toc" aria-label="contents"><ol>' + "".join(
               f'<li><a href="#{key}">{_e(SECTION_TITLES[key])}</a>'
               + (f' <span class="meta">({fmt_count(count)})</span>' if count is not None else "") + "</li>"
               for key, count in toc) + "</ol></nav>"]
    for key, count in toc:
        if key == "problems":
            out.append(_section(key, count) + "<p>These inputs were skipped; everything else was processed.</p>")
            out.append(data_table("problems", data.problems, data))
        elif key == "clusters":
            rows = [{**c, **{a: (c.get("plan") or {}).get(a, 0) for a in ACTIONS},
                     "reason": STATUS_REASONS.get(c.get("status") or "", "")} for c in clusters]
            out.append(_section(key, count))
            out.append(data_table("clusters", rows, data, row_id=lambda r: cluster_anchor(r["cluster"])))
            notes = [f"{c['cluster']}: {n}" for c in clusters for n in c.get("notes") or ()]
            if notes:
                out.append("<details><summary>Planner notes</summary><ul>"
                           + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></details>")
        elif key in ("plan", "drift", "orphans", "policy", "principals", "issues"):
            rows = data.tables.get(key) or []
            out.append(_section(key, count, len(rows)))
            out.append(data_table(key, rows, data) if rows else '<p class="meta">Nothing.</p>')
        elif key == "charts":
            out.append(_section(key, None))
            out.append(_charts(data))
        elif key == "run":
            out.append(_section(key, None))
            out.append("<table><thead><tr><th>stage</th><th class=n>seconds</th><th>detail</th></tr></thead><tbody>"
                       + "".join(f'<tr><td>{_e(s)}</td><td class="n">{t:.1f}</td><td>{_e(d)}</td></tr>'
                                 for s, t, d in data.stages) + "</tbody></table>")
            out += [f'<p class="meta">{_e(note)}</p>' for note in data.notes]
    out.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(out)


def _charts(data: ReportData) -> str:
    clusters = data.clusters
    return "".join([
        "<h3>Changes by type</h3>",
        hbar_chart([(c["cluster"], {**(c.get("plan") or {}), "problem": c.get("problems", 0)}) for c in clusters],
                   ACTION_COLORS, "Changes by type, per cluster"),
        "<h3>Drift by cluster</h3>",
        hbar_chart([(c["cluster"], {"drifted values": c.get("drift", 0), "orphan topics": c.get("orphan_topics", 0),
                                    "orphan ACL bindings": c.get("orphan_acls", 0)}) for c in clusters],
                   {"drifted values": "#ef6c00", "orphan topics": "#8d6e63", "orphan ACL bindings": "#bcaaa4"},
                   "Drift and orphans per cluster"),
        '<h3>Partitions per broker</h3><p class="meta">Replicas per broker (grey) and the leaders among them '
        "(dark), from the snapshots; skew = (max - min) / max.</p>",
        broker_charts(data.brokers),
        f'<h3>Top principals by access</h3><p class="meta">Topics each principal can read or write (effective '
        f"access from the {_e(data.access_from)} ACLs, across clusters).</p>",
        hbar_chart([(p["principal"], {"read": p.get("read", 0), "write": p.get("write", 0)}) for p in data.principals],
                   ACCESS_COLORS, "Top principals by access"),
    ])
