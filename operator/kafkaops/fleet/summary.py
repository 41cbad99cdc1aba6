"""summary.md: the fleet plan for a CI log or a pull-request comment.

The totals, the per-cluster counts, then per cluster its top findings in the order people fix
them (refused changes, policy errors, changes, drift, orphans, policy warnings), each with its
manifest `file:line` and its reason; then invalid manifests, input problems and the run's stages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkaops.fleet.report import ACTIONS, ReportData, plan_total, shown_path

TOP_PER_CLUSTER = 10


def _md(value: Any) -> str:
    text = "" if value is None else (", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_md(r.get(c)) for c in columns) + " |" for r in rows]
    return lines


def _sum(clusters: Sequence[Mapping[str, Any]], key: str) -> int:
    return sum(int(c.get(key) or 0) for c in clusters)


def _where(row: Mapping[str, Any], cwd: str | None) -> str:
    if not row.get("file"):
        return ""
    line = row.get("line")
    return f" (`{shown_path(row['file'], cwd)}{f':{line}' if line else ''}`)"


def findings_of(data: ReportData, cluster: str) -> list[str]:
    """The cluster's findings as Markdown bullets, most pressing first."""
    tables = data.tables
    mine = {name: [r for r in tables.get(name) or () if r.get("cluster") == cluster] for name in
            ("plan", "drift", "orphans", "policy")}
    out: list[str] = []
    for r in mine["plan"]:
        if r.get("action") == "refused":
            out.append(f"- **refused** {r['kind']} `{r['name']}`{_where(r, data.cwd)}: {r['reason']}")
    for r in mine["policy"]:
        if r.get("severity") == "error":
            out.append(f"- **policy error** {r['rule']} on {r['kind']} `{r['name']}` ({r['state']})"
                       f"{_where(r, data.cwd)}: {r['reason']}")
    for r in mine["plan"]:
        if r.get("action") != "refused":
            out.append(f"- {r['action']} {r['kind']} `{r['name']}`{_where(r, data.cwd)}: {r['change']}")
    for r in mine["drift"]:
        out.append(f"- drift {r['kind']} `{r['name']}` {r['field']}: manifest {r['desired']}, cluster "
                   f"{r['observed']}{_where(r, data.cwd)}")
    for r in mine["orphans"]:
        out.append(f"- orphan {r['kind']} `{r['name']}` ({r['detail']}): {r['reason']}")
    for r in mine["policy"]:
        if r.get("severity") != "error":
            out.append(f"- policy {r['severity']} {r['rule']} on {r['kind']} `{r['name']}` ({r['state']})"
                       f"{_where(r, data.cwd)}: {r['reason']}")
    return out


def principal_changes(clusters: Sequence[Mapping[str, Any]]) -> str:
    """` (2 to KafkaUsers, 1 to KafkaClientQuotas)` when the plan changes users or quotas, else ""."""
    users = sum(int((c.get("kinds") or {}).get("KafkaUser", 0)) for c in clusters)
    quotas = sum(int((c.get("kinds") or {}).get("KafkaClientQuota", 0)) for c in clusters)
    return f" ({users} to KafkaUsers, {quotas} to KafkaClientQuotas)" if users or quotas else ""


def render_markdown(data: ReportData, top: int = TOP_PER_CLUSTER) -> str:
    clusters = data.clusters
    changes = sum(plan_total(c) for c in clusters)
    lines = [f"# {data.title}", "",
             f"{len(clusters)} cluster(s): **{changes} change(s)**{principal_changes(clusters)}, "
             f"{_sum(clusters, 'problems')} refused, "
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
    lines += ["", "## Top findings per cluster", ""]
    for c in clusters:
        found = findings_of(data, c["cluster"])
        lines.append(f"### {c['cluster']}")
        lines.append("")
        if c.get("status") not in (None, "ok"):
            lines.append(f"- status: {c['status']}")
        lines += found[:top] or ["- nothing to do"]
        if len(found) > top:
            lines.append(f"- … and {len(found) - top} more (report.html)")
        lines.append("")
    issues = data.tables.get("issues") or []
    if issues:
        lines += ["## Manifest issues", ""]
        lines += [f"- {i['severity']}: `{shown_path(i['file'], data.cwd)}{':' + str(i['line']) if i.get('line') else ''}` "
                  f"{i.get('path') or ''}: {i['reason']} ({i['rule']})" for i in issues[:top]]
        lines.append("")
    if data.principals:
        lines += ["## Top principals by access", ""]
        lines += _md_table(data.principals[:10], ["principal", "read", "write", "clusters"])
        lines.append("")
    lines += ["## Run", ""]
    lines += [f"- {s}: {t:.1f} s{f' ({d})' if d else ''}" for s, t, d in data.stages]
    lines += [f"- {k}: `{v}`" for k, v in data.inputs.items()]
    return "\n".join(lines) + "\n"
