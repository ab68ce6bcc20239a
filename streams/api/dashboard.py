"""The read-only dashboard: server-rendered HTML, no script, nothing fetched from elsewhere.

``/`` lists recent verdicts the stream wrote to Redis (outcome, nodes, root line), filtered by
domain, node and job-end time; ``/workload/{id}`` draws one workload's chain as a timeline.
Every piece of log text goes through :func:`html.escape`: log lines are attacker-controlled.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import Any, get_args
from urllib.parse import quote, urlencode

import orjson
from aiohttp import web
from redis.asyncio import Redis

from extractors.vocabulary import Domain, VerdictDomain
from sinks.redis_keys import VerdictKeys

__all__ = ["dashboard_app"]

RECENT_LIMIT = 500
CLIENT = web.AppKey("client", Redis)
KEYS = web.AppKey("keys", VerdictKeys)
DOMAINS: tuple[Domain, ...] = get_args(VerdictDomain)

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:4px 6px;text-align:left;
vertical-align:top}code{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.hardware{color:#b00}.user{color:#06c}.ambiguous{color:#a60}.bar{background:#cde;height:10px;position:relative}
.span{background:#369;height:10px;position:absolute}.root .span{background:#b00}form label{margin-right:1em}
"""


def _page(title: str, body: str) -> web.Response:
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>"
    )
    return web.Response(text=html, content_type="text/html")


def _ms(text: str | None) -> int | None:
    if not text:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000)


async def _recent(request: web.Request) -> list[dict[str, Any]]:
    client, keys = request.app[CLIENT], request.app[KEYS]
    ids = await client.zrevrange(keys.recent, 0, RECENT_LIMIT - 1)
    async with client.pipeline(transaction=False) as pipe:
        for workload_id in ids:
            pipe.hget(keys.verdict(workload_id.decode()), "json")
        blobs = await pipe.execute()
    return [orjson.loads(blob) for blob in blobs if blob is not None]


def _nodes(verdict: dict[str, Any]) -> list[str]:
    return verdict["responsible_nodes"] or verdict["job"]["nodes"]


def _matches(verdict: dict[str, Any], domain: str, node: str, since: int | None, until: int | None) -> bool:
    if domain and domain != verdict.get("sub_domain") and domain not in verdict["failure_domains"]:
        return False
    if node and node not in verdict["job"]["nodes"] and node not in verdict["responsible_nodes"]:
        return False
    end = _ms(verdict["job"].get("end"))
    if since is not None and (end is None or end < since):
        return False
    return not (until is not None and (end is None or end > until))


def _filters(query: dict[str, str]) -> str:
    options = "".join(
        f'<option value="{d}"{" selected" if query.get("domain") == d else ""}>{d}</option>' for d in DOMAINS
    )
    field = 'name="{0}" value="{1}"'
    return (
        '<form method="get" action="/">'
        f'<label>domain <select name="domain"><option value="">any</option>{options}</select></label>'
        f"<label>node <input {field.format('node', escape(query.get('node', '')))}></label>"
        f"<label>ended after <input {field.format('since', escape(query.get('since', '')))} "
        'placeholder="2024-05-01T00:00:00Z"></label>'
        f"<label>ended before <input {field.format('until', escape(query.get('until', '')))}></label>"
        '<button type="submit">filter</button></form>'
    )


def _row(verdict: dict[str, Any]) -> str:
    root = verdict.get("root_symptom") or {}
    link = f"/workload/{quote(verdict['workload_id'], safe='')}"
    outcome = verdict["verdict"]["attribution_outcome"]
    return (
        f'<tr class="verdict"><td><a href="{escape(link)}">{escape(verdict["workload_id"])}</a></td>'
        f"<td>{escape(verdict['job'].get('end') or '-')}</td>"
        f'<td class="{escape(verdict.get("sub_domain") or "")}">{escape(outcome)}</td>'
        f"<td>{escape(', '.join(_nodes(verdict)[:8]))}</td>"
        f"<td>{escape(root.get('symptom', '-'))}</td><td><code>{escape(root.get('line', ''))}</code></td></tr>"
    )


async def recent_page(request: web.Request) -> web.Response:
    query = dict(request.query)
    try:
        since, until = _ms(query.get("since")), _ms(query.get("until"))
    except ValueError:
        return _page("bad filter", "<p>ended after / before must be RFC 3339 times</p>")
    domain, node = query.get("domain", ""), query.get("node", "").strip()
    shown = [v for v in await _recent(request) if _matches(v, domain, node, since, until)]
    rows = "".join(map(_row, shown)) or '<tr><td colspan="6">no verdict matches</td></tr>'
    table = (
        "<table><thead><tr><th>workload</th><th>job end</th><th>outcome</th><th>nodes</th>"
        f"<th>root symptom</th><th>root line</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    count = f"<p>{len(shown)} verdict(s){' matching ' + escape(urlencode(query)) if query else ''}</p>"
    return _page("Faultstream verdicts", f"<h1>Recent verdicts</h1>{_filters(query)}{count}{table}")


def _timeline(chain: list[dict[str, Any]]) -> str:
    times = [(_ms(e["first"]) or 0, _ms(e["last"]) or 0) for e in chain]
    low = min((t[0] for t in times), default=0)
    span = max(max((t[1] for t in times), default=0) - low, 1)
    items = []
    for element, (first, last) in zip(chain, times, strict=True):
        left, width = 100 * (first - low) / span, max(100 * (last - first) / span, 0.5)
        left = min(left, 100 - width)  # a one-instant element at the end stays inside the bar
        why = f" explained by {escape(element['explained_by'])}" if element.get("explained_by") else ""
        items.append(
            f'<li class="{escape(element["role"])}"><b>{escape(element["symptom"])}</b> '
            f"({escape(element['role'])}, {escape(element['domain'])}, {element['count']} line(s) on "
            f"{escape(', '.join(element['nodes'][:8]))}){why}<br>{escape(element['first'])} .. "
            f'{escape(element["last"])}<div class="bar"><div class="span" '
            f'style="left:{left:.1f}%;width:{width:.1f}%"></div></div></li>'
        )
    return f'<ol class="timeline">{"".join(items)}</ol>'


async def workload_page(request: web.Request) -> web.Response:
    workload_id = request.match_info["workload_id"]
    blob = await request.app[CLIENT].hget(request.app[KEYS].verdict(workload_id), "json")
    if blob is None:
        raise web.HTTPNotFound(text=f"no verdict for workload {workload_id}")
    verdict = orjson.loads(blob)
    root = verdict.get("root_symptom") or {}
    facts = verdict["job"]
    outcome = verdict["verdict"]["attribution_outcome"]
    body = (
        f'<p><a href="/">all verdicts</a></p><h1>Workload {escape(workload_id)}</h1>'
        f'<p class="outcome">{escape(outcome)}: {escape(verdict["detail"])}</p>'
        f"<p>{escape(facts.get('scheduler') or '-')} job, state {escape(facts.get('state') or '-')}, "
        f"{escape(facts.get('start') or '?')} .. {escape(facts.get('end') or '?')}, user "
        f"{escape(facts.get('user') or '-')}, nodes {escape(', '.join(facts['nodes'][:16]))}</p>"
        f"<h2>Root line</h2><p>{escape(root.get('node') or '-')} {escape(root.get('time') or '')} "
        f'<code class="root-line">{escape(root.get("line") or "none")}</code></p>'
        f"<h2>Chain</h2>{_timeline(verdict['chain'])}"
    )
    return _page(f"Workload {workload_id}", body)


def dashboard_app(client: Redis, prefix: str) -> web.Application:
    app = web.Application()
    app[CLIENT], app[KEYS] = client, VerdictKeys(prefix)
    app.router.add_get("/", recent_page)
    app.router.add_get("/workload/{workload_id}", workload_page)
    return app
