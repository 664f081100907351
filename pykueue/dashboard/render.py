"""The dashboard's HTML: server-rendered pages, one stylesheet and one small script, nothing fetched
from elsewhere. Every text from the cluster is escaped.

The live part of a page sits in ``<main id="live">``; the script listens to ``/events`` (server-sent
events) and, when the state moves, fetches the same page with ``fragment=1`` and swaps that element.
Forms (the what-if box) sit outside it, so typing is never interrupted by an update.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

from pykueue.dashboard.view import Bar, CohortNode, Happening, QueueRows, QueueSummary, Row

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
header{background:#1f2d3d;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:center}
header a{color:#fff}
main,section.box{padding:.5em 1em}
a{color:#0b4f8a}
.chip{display:inline-block;padding:0 .5em;border-radius:3px;font-weight:600}
.cohort{border-left:3px solid #7f8c8d;margin:.5em 0;padding-left:.75em}
.cq{background:#fff;border:1px solid #ddd;border-radius:4px;margin:.5em 0;padding:.5em}
.bar{position:relative;height:14px;background:#e8e8e8;border:1px solid #999;width:320px;display:inline-block;
vertical-align:middle}
.bar span{position:absolute;top:0;bottom:0;left:0}
.bar .borrowed{background:repeating-linear-gradient(45deg,#7b241c,#7b241c 3px,#e45756 3px,#e45756 6px)}
.bar .nominal{border-right:2px solid #1b1b1b}
table{border-collapse:collapse;margin:.25em 0}
th,td{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
.reason{font-weight:600}
.muted{color:#555}
textarea{width:100%;max-width:60em;font-family:monospace}
.error{color:#8b0000;font-weight:600}
"""

SCRIPT = """
(function(){
  var live=document.getElementById('live'); if(!live||!window.EventSource)return;
  var busy=false, again=false;
  function refresh(){
    if(busy){again=true;return;} busy=true;
    var u=new URL(location.href); u.searchParams.set('fragment','1');
    fetch(u,{headers:{'Accept':'text/html'}}).then(function(r){return r.ok?r.text():null;})
      .then(function(t){if(t!==null){live.innerHTML=t;live.dataset.version=String(Number(live.dataset.version||0)+1);}})
      .finally(function(){busy=false; if(again){again=false;refresh();}});
  }
  var es=new EventSource('events'.replace(/^/, document.body.dataset.root||'/'));
  es.onmessage=refresh;
})();
"""


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def page(title: str, live: str, *, root: str = "/", extra: str = "") -> str:
    """A whole page: header, the live fragment, anything static after it, the script."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{e(title)} - pykueue</title>"
        f"<style>{STYLE}</style></head>"
        f"<body data-root=\"{e(root)}\"><header><strong>pykueue dashboard</strong>"
        f"<a href=\"{e(root)}\">Queues</a><a href=\"{e(root)}what-if\">What if</a></header>"
        f"<main id=\"live\">{live}</main>{extra}"
        f"<script>{SCRIPT}</script></body></html>"
    )


def chip(name: str, colors: dict[str, tuple[str, str]], root: str = "/") -> str:
    bg, fg = colors.get(name, ("#555555", "#ffffff"))
    return (f"<a class=\"chip\" style=\"background:{bg};color:{fg}\" "
            f"href=\"{e(root)}queues/{quote(name, safe='')}\">{e(name)}</a>")


def bar(b: Bar, color: str) -> str:
    """Usage against the nominal quota: the queue's colour up to the nominal quota, hatched beyond it
    (borrowed), a line at the nominal quota; the numbers beside it."""
    scale = b.scale
    own = min(b.used, b.nominal)
    width = 100 * own / scale
    borrowed = 100 * max(0, b.used - b.nominal) / scale
    nominal = 100 * b.nominal / scale
    words = (f"{b.text(b.used)} of {b.text(b.nominal)} used"
             + (f", {b.text(b.borrowed)} borrowed" if b.borrowed else "")
             + (f", may borrow {b.text(b.borrowing_limit)}" if b.borrowing_limit is not None else "")
             + (f", lends at most {b.text(b.lending_limit)}" if b.lending_limit is not None else ""))
    return (
        f"<tr><td>{e(b.flavor)}</td><td>{e(b.resource)}</td><td>"
        f"<span class=\"bar\" role=\"img\" aria-label=\"{e(b.flavor)} {e(b.resource)}: {e(words)}\">"
        f"<span class=\"nominal\" style=\"width:{nominal:.2f}%\"></span>"
        f"<span style=\"width:{width:.2f}%;background:{color}\"></span>"
        f"<span class=\"borrowed\" style=\"left:{width:.2f}%;width:{borrowed:.2f}%\"></span></span>"
        f"</td><td>{e(words)}</td></tr>"
    )


def queue_card(q: QueueSummary, rows: QueueRows | None, colors: dict[str, tuple[str, str]], root: str,
               fair_sharing: bool) -> str:
    share = ""
    if fair_sharing and q.weighted_share is not None:
        share = f" · fair share <strong>{q.weighted_share}</strong>"
    inactive = "" if q.active else f" · <span class=\"error\">inactive: {e(q.inactive_message)}</span>"
    bars = "".join(bar(b, colors.get(q.name, ("#555555", ""))[0]) for b in q.bars)
    out = [f"<div class=\"cq\" id=\"cq-{e(q.name)}\">{chip(q.name, colors, root)} "
           f"<span class=\"muted\">{q.pending} pending · {q.reserving} reserving · {q.admitted} admitted"
           f"</span>{share}{inactive}"]
    if bars:
        out.append("<table><thead><tr><th>flavor</th><th>resource</th><th>usage</th><th>quota</th></tr></thead>"
                   f"<tbody>{bars}</tbody></table>")
    if rows is not None:
        out.append(workload_tables(rows, root, more=True))
    out.append("</div>")
    return "".join(out)


def cohort_html(node: CohortNode, rows: dict[str, QueueRows], colors: dict[str, tuple[str, str]], root: str,
                fair_sharing: bool) -> str:
    share = f" · fair share <strong>{node.weighted_share}</strong>" if fair_sharing and node.weighted_share is not None else ""
    inner = "".join(cohort_html(c, rows, colors, root, fair_sharing) for c in node.cohorts)
    inner += "".join(queue_card(q, rows.get(q.name), colors, root, fair_sharing) for q in node.queues)
    return f"<section class=\"cohort\"><h3>Cohort {e(node.name)}{share}</h3>{inner}</section>"


def unreadable(kinds: Mapping[str, str]) -> str:
    """Which kinds the pages go without, and why (refused or not served)."""
    if not kinds:
        return ""
    listed = ", ".join(f"{e(k)} ({e(v)})" for k, v in sorted(kinds.items()))
    return f"<p class=\"muted\" role=\"status\">Not watched, so not shown: {listed}.</p>"


def overview(roots: list[CohortNode], lone: list[QueueSummary], rows: dict[str, QueueRows],
             colors: dict[str, tuple[str, str]], root: str = "/", fair_sharing: bool = False) -> str:
    if not roots and not lone:
        return "<h2>Queues</h2><p>No ClusterQueues yet.</p>"
    parts = ["<h2>Queues</h2>"]
    parts += [cohort_html(n, rows, colors, root, fair_sharing) for n in roots]
    parts += [queue_card(q, rows.get(q.name), colors, root, fair_sharing) for q in lone]
    return "".join(parts)


def _workload_link(key: str, root: str) -> str:
    return f"<a href=\"{e(root)}workloads/{quote(key, safe='/')}\">{e(key)}</a>"


def _row(r: Row, root: str, pending: bool) -> str:
    notes = []
    if r.preempted_by:
        notes.append(f"preempted by {_workload_link(r.preempted_by, root)}")
    if r.preempted:
        notes.append("preempted " + ", ".join(_workload_link(v, root) for v in r.preempted))
    note = f"<div class=\"muted\">{'; '.join(notes)}</div>" if notes else ""
    position = "" if r.position is None else str(r.position)
    if pending:
        why = (f"<span class=\"reason\">{e(r.reason)}</span>: {e(r.message)}" if r.reason else e(r.message))
        return (f"<tr data-workload=\"{e(r.key)}\" data-state=\"{e(r.state)}\"><td>{position}</td>"
                f"<td>{_workload_link(r.key, root)}</td><td>{r.priority}</td><td>{e(r.age)}</td>"
                f"<td>{why}{note}</td></tr>")
    return (f"<tr data-workload=\"{e(r.key)}\" data-state=\"{e(r.state)}\"><td>{_workload_link(r.key, root)}</td>"
            f"<td>{r.priority}</td><td>{e(r.flavors)}</td><td>{e(r.age)}</td><td>{e(r.state)}{note}</td></tr>")


def workload_tables(rows: QueueRows, root: str, more: bool = False) -> str:
    """The queue's admitted workloads, then its pending ones with their position and Kueue's reason."""
    out = []
    if rows.admitted:
        out.append("<table class=\"admitted\"><caption>Holding quota, in admission order</caption><thead><tr>"
                   "<th>workload</th><th>priority</th><th>flavor</th><th>age</th><th>state</th></tr></thead><tbody>"
                   + "".join(_row(r, root, False) for r in rows.admitted) + "</tbody></table>")
    if rows.pending:
        out.append("<table class=\"pending\"><caption>Pending, in the order Kueue admits them</caption><thead><tr>"
                   "<th>position</th><th>workload</th><th>priority</th><th>age</th><th>why it waits</th></tr></thead>"
                   "<tbody>" + "".join(_row(r, root, True) for r in rows.pending) + "</tbody></table>")
    hidden = max(0, rows.admitted_total - len(rows.admitted)) + max(0, rows.pending_total - len(rows.pending))
    if more and hidden:
        out.append(f"<p><a href=\"{e(root)}queues/{quote(rows.cluster_queue, safe='')}\">"
                   f"all {rows.admitted_total} holding quota and {rows.pending_total} pending</a></p>")
    return "".join(out)


def pager(rows: QueueRows, root: str) -> str:
    if rows.pages <= 1:
        return ""
    base = f"{e(root)}queues/{quote(rows.cluster_queue, safe='')}?page="
    prev = f"<a href=\"{base}{rows.page - 1}\" rel=\"prev\">previous</a>" if rows.page > 0 else ""
    nxt = f"<a href=\"{base}{rows.page + 1}\" rel=\"next\">next</a>" if rows.page + 1 < rows.pages else ""
    return f"<nav aria-label=\"pages\">page {rows.page + 1} of {rows.pages} {prev} {nxt}</nav>"


def queue_page(q: QueueSummary | None, rows: QueueRows, colors: dict[str, tuple[str, str]], root: str,
               fair_sharing: bool) -> str:
    if q is None:
        return f"<h2>ClusterQueue {e(rows.cluster_queue)}</h2><p>No such ClusterQueue (deleted?).</p>"
    return (f"<h2>ClusterQueue {e(q.name)}</h2>{queue_card(q, None, colors, root, fair_sharing)}"
            f"{pager(rows, root)}{workload_tables(rows, root)}{pager(rows, root)}")


def _timeline(items: list[Happening]) -> str:
    if not items:
        return "<p>No conditions or events yet.</p>"
    body = "".join(f"<tr><td>{e(h.time)}</td><td>{e(h.what)}</td><td>{e(h.kind)}</td><td>{e(h.status)}</td>"
                   f"<td class=\"reason\">{e(h.reason)}</td><td>{e(h.message)}</td></tr>" for h in items)
    return ("<table class=\"timeline\"><thead><tr><th>time</th><th></th><th>type</th><th>status</th><th>reason</th>"
            f"<th>message</th></tr></thead><tbody>{body}</tbody></table>")


def _facts(rows: list[tuple[str, Any]]) -> str:
    cells = "".join(f"<tr><th scope=\"row\">{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    return f"<table class=\"owner\">{cells}</table>"


def _requests(pod_spec: dict[str, Any]) -> str:
    return "; ".join(f"{c.get('name')}: " + ", ".join(f"{k}={v}" for k, v in
                     ((c.get("resources") or {}).get("requests") or {}).items())
                     for c in pod_spec.get("containers") or [])


def _owner(kind: str, name: str, obj: dict[str, Any] | None) -> str:
    """A Job (suspension, counts, requests) or a Pod (phase, node, gates, requests) behind a workload."""
    if obj is None:
        return f"<p>{e(kind)} {e(name)} (not readable)</p>"
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    if kind == "Pod":
        rows = [("phase", st.get("phase", "")), ("node", spec.get("nodeName", "")),
                ("scheduling gates", ", ".join(g.get("name", "") for g in spec.get("schedulingGates") or [])),
                ("node selector", ", ".join(f"{k}={v}" for k, v in (spec.get("nodeSelector") or {}).items())),
                ("requests", _requests(spec))]
    else:
        rows = [("suspended", spec.get("suspend", False)), ("parallelism", spec.get("parallelism", 1)),
                ("completions", spec.get("completions", "")), ("active", st.get("active", 0)),
                ("ready", st.get("ready", 0)), ("succeeded", st.get("succeeded", 0)), ("failed", st.get("failed", 0)),
                ("requests", _requests((spec.get("template") or {}).get("spec") or {}))]
    return f"<p>{e(kind)} <strong>{e(name)}</strong></p>{_facts(rows)}"


def behind(owned: list[tuple[str, str, dict[str, Any] | None]], more: int = 0) -> str:
    if not owned:
        return "<p>No owner: a Workload created directly.</p>"
    rest = f"<p>and {more} more</p>" if more else ""
    return "".join(_owner(*item) for item in owned) + rest


def explanation(doc: dict[str, Any] | None, root: str) -> str:
    """``pykueue explain``'s answer as HTML: state, position, quota rows, what would admit it."""
    if doc is None:
        return "<p>The engine does not hold this workload (finished, or not valid).</p>"
    if "error" in doc:
        return f"<p class=\"error\">{e(doc['error'])}</p>"
    out = [f"<p>State <strong>{e(doc.get('state'))}</strong> in ClusterQueue {e(doc.get('clusterQueue') or '-')}"]
    if doc.get("flavors"):
        out.append(" with flavors " + e(", ".join(f"{k}={v}" for k, v in doc["flavors"].items())))
    out.append(".</p>")
    if doc.get("reason"):
        out.append(f"<p><span class=\"reason\">{e(doc['reason'])}</span>: {e(doc.get('message') or '')}</p>")
    queue = doc.get("queue")
    if queue is not None:
        if queue.get("position") is None:
            out.append("<p>Not in its queue's order (inactive, or its queue cannot take it).</p>")
        else:
            ahead = ", ".join(_workload_link(k, root) for k in queue.get("ahead") or [])
            out.append(f"<p>Position {queue['position']} of {queue['length']} in its ClusterQueue "
                       f"({queue['positionInLocalQueue']} in its LocalQueue)"
                       + (f"; ahead: {ahead}" if ahead else "") + ".</p>")
    if doc.get("quota"):
        head = ("resource", "flavor", "requested", "nominal", "used", "available", "atMost", "short")
        body = "".join("<tr>" + "".join(f"<td>{e(r.get(k, ''))}</td>" for k in head) + "</tr>" for r in doc["quota"])
        out.append("<table class=\"quota\"><thead><tr>" + "".join(f"<th>{k}</th>" for k in head)
                   + f"</tr></thead><tbody>{body}</tbody></table>")
    if doc.get("toBeAdmitted"):
        out.append("<p>To be admitted it needs:</p><ul>"
                   + "".join(f"<li>{e(line)}</li>" for line in doc["toBeAdmitted"]) + "</ul>")
    return "".join(out)


def workload_page(key: str, wl: dict[str, Any] | None, items: list[Happening], owned: str,
                  answer: dict[str, Any] | None, root: str) -> str:
    if wl is None:
        return f"<h2>Workload {e(key)}</h2><p>No such Workload (deleted, or not created yet).</p>"
    return (f"<h2>Workload {e(key)}</h2>"
            f"<section><h3>The engine's answer (pykueue explain)</h3>{explanation(answer, root)}</section>"
            f"<section><h3>Conditions and events</h3>{_timeline(items)}</section>"
            f"<section><h3>Behind it</h3>{owned}</section>")


def what_if_form(text: str = "", root: str = "/") -> str:
    return (f"<section class=\"box\"><h2>What if</h2><form method=\"post\" action=\"{e(root)}what-if\">"
            "<label for=\"manifest\">A Job (or Workload) manifest, as YAML; nothing is created</label><br>"
            f"<textarea id=\"manifest\" name=\"manifest\" rows=\"14\">{e(text)}</textarea><br>"
            "<button type=\"submit\">Where would it be admitted?</button></form></section>")


def what_if_answer(doc: dict[str, Any] | None, error: str | None, root: str) -> str:
    if error is not None:
        return f"<section class=\"box\"><h3>Answer</h3><p class=\"error\" role=\"alert\">{e(error)}</p></section>"
    if doc is None:
        return ""
    if doc.get("state") in ("Admitted", "QuotaReserved"):
        where = ", ".join(f"{k}={v}" for k, v in (doc.get("flavors") or {}).items())
        verdict = (f"<p class=\"verdict\"><strong>Admitted now</strong> in ClusterQueue "
                   f"{e(doc.get('clusterQueue'))} (flavors {e(where)}).</p>")
        if doc.get("preempts"):
            verdict += ("<p class=\"preempts\">By preempting "
                        + ", ".join(_workload_link(k, root) for k in doc["preempts"]) + ".</p>")
    else:
        verdict = ("<p class=\"verdict\"><strong>Not now.</strong> It would wait until what is listed below "
                   "changes.</p>")
    return f"<section class=\"box\"><h3>Answer</h3>{verdict}{explanation(doc, root)}</section>"
