"""plan scaling's outputs: the JSON document (timeline + summary), a table, and a self-contained HTML chart (inline
SVG: arrivals, serving nodes, queue per node, the SLO line on the wait)."""

from __future__ import annotations

import html
import math
from datetime import timedelta

from gpufleet.cost import figures
from gpufleet.simulate.engine import Result


def _r(x, nd=3):
    return None if x is None else round(x, nd)


def timeline(r: Result) -> list[dict]:
    start = r.trace.start
    out = []
    for i, t in enumerate(r.times):
        row = {
            "time": (start + timedelta(seconds=t)).isoformat().replace("+00:00", "Z"),
            "t_s": t,
            "arrivals_per_s": _r(r.arrivals[i]),
            "serving": r.counts["serving"][i],
            "booting": r.counts["booting"][i],
            "waiting_on_hook": r.counts["hook"][i],
            "draining": r.counts["draining"][i],
            "queue": _r(r.queue[i], 1),
            "queue_per_node": _r(r.queue_per_node[i], 2),
            "p95_wait_s": _r(r.p95_wait_s[i], 2),
            "ttft_s": _r(r.ttft_s[i], 3),
            "seen": {name: _r(v[i], 2) for name, v in r.seen.items()},
        }
        out.append(row)
    return out


def document(stack: str, r: Result, summ: dict, cost: dict | None, notes: list[str]) -> dict:
    b = r.behaviour
    return {
        "stack": stack,
        "cloud": b.cloud,
        "trace": {
            "source": r.trace.source,
            "start": r.trace.start.isoformat(),
            "step_s": r.trace.step_s,
            "rows": len(r.trace.rates),
        },
        "capacity": r.capacity.to_json(),
        "declared": {
            "groups": [
                {
                    "name": g.name,
                    "min": g.min,
                    "max": g.max,
                    "desired": g.desired,
                    "billing": g.billing,
                    "attached": list(g.attached),
                }
                for g in b.groups
            ],
            "reaction_s": b.reaction_s,
            "reaction": b.reaction_how,
            "hooks": [
                {
                    "group": h.group,
                    "transition": h.transition,
                    "timeout_s": h.timeout_s,
                    "completed_by": h.completed_by or None,
                    "why": h.why,
                }
                for h in b.hooks
            ],
        },
        "timings": {k: v.to_json() for k, v in sorted(b.timings.items())},
        "summary": {**summ, "cost": cost},
        "notes": notes,
        "timeline": timeline(r),
        **({"split": split(r)} if r.groups else {}),
    }


def split(r) -> dict:
    """Groups with different backend weights (a rollout): each group's weight, share of the trace's requests, node
    counts and worst TTFT as the load balancer split the requests (engine.load_split)."""
    dt = r.trace.step_s
    total = sum(r.arrivals) * dt
    out = {}
    for g in r.behaviour.groups:
        series = r.groups[g.name]
        requests = sum(series["arrivals"]) * dt
        ttfts = [t for t in series["ttft_s"] if t is not None]
        out[g.name] = {
            "weight": g.weight,
            "requests": round(requests, 1),
            "share": round(requests / total, 4) if total else 0.0,
            "serving_min": min(series["serving"], default=0),
            "serving_max": max(series["serving"], default=0),
            "ttft_s_max": round(max(ttfts), 3) if ttfts else None,
        }
    return out


def _sampled(n: int, most: int) -> list[int]:
    if n <= most:
        return list(range(n))
    every = math.ceil(n / most)
    return list(range(0, n, every))


def peak_needs(s: dict) -> str:
    """What the peak needs, and whether the groups may hold it (summary's peak_nodes_needed is not capped at their max):
    their own max, or the lower one a schedule holds them at while the peak arrives, naming it."""
    need, top, at_peak = s["peak_nodes_needed"], s["nodes_max"], s["nodes_max_at_peak"]
    beyond = ""
    if need > at_peak and s["max_at_peak_set_by"]:
        by = ", ".join(f"{h['schedule']} ({h['cron']!r} {h['zone']}, max {h['max']})" for h in s["max_at_peak_set_by"])
        schedules = "schedules" if len(s["max_at_peak_set_by"]) > 1 else "schedule"
        beyond = f", more than the groups' max of {at_peak} while {schedules} {by} holds them ({top} without it)"
    elif need > top:
        beyond = f", more than the groups' max of {top}"
    return f"peak {s['peak_requests_per_s']:g} req/s needs {need} nodes{beyond}"


def over_slo(s: dict) -> str:
    """The seconds over the TTFT SLO as every format says them; without an SLO there is nothing to be over (the HTML
    said "seconds over SLO: 0" while the TTFT reached thousands of seconds)."""
    slo = s["slo_ttft_ms"]
    return (
        f"over the TTFT SLO ({slo:g} ms): {s['seconds_over_slo']:g} s" if slo is not None else "no TTFT SLO given (--slo-ttft-ms)"
    )


def backlog(s: dict) -> str | None:
    """The requests a trace ends with still queued, as every format says them (None when it ends with none): the
    seconds over the SLO stop at the trace's end and the cost per million tokens counts the served tokens only."""
    if not s["queue_at_end"]:
        return None
    return (
        f"backlog at the end: {s['queue_at_end']:g} requests still queued (served {s['requests_served']:g} of "
        f"{s['requests_arrived']:g} arrived; the trace's figures stop at its end and its cost counts served tokens only)"
    )


def _times(stamps: list[str]) -> list[str]:
    """The rows' times as the table shows them: to the minute, or to the second where two rows shown would read the
    same minute (three rows of a short 10 s trace read 12-07 03:00 alike)."""
    minutes = [t[5:16].replace("T", " ") for t in stamps]
    if len(set(minutes)) == len(minutes):
        return minutes
    return [t[5:19].replace("T", " ") for t in stamps]


def table(doc: dict, c, rows: int = 30) -> None:
    # deferred: rich: only a drawn table or styled text needs it, not --json or a preview
    from rich.table import Table

    tl = doc["timeline"]
    t = Table(
        title=f"{doc['stack']}: {doc['trace']['source']}, {doc['capacity']['requests_per_s']:g} req/s per node ({doc['capacity']['source']})"
    )
    for col in ("time", "req/s", "serving", "booting", "hook", "draining", "queue/node", "p95 wait s", "TTFT s"):
        t.add_column(col, justify="left" if col == "time" else "right", no_wrap=True)
    shown = _sampled(len(tl), rows)
    for i, when in zip(shown, _times([tl[i]["time"] for i in shown]), strict=True):
        row = tl[i]
        t.add_row(
            when,
            f"{row['arrivals_per_s']:g}",
            str(row["serving"]),
            str(row["booting"]),
            str(row["waiting_on_hook"]),
            str(row["draining"]),
            f"{row['queue_per_node']:g}",
            "never served" if row["p95_wait_s"] is None else f"{row['p95_wait_s']:g}",
            "-" if row["ttft_s"] is None else f"{row['ttft_s']:g}",
        )
    c.print(t)
    s = doc["summary"]
    ttp = s["time_to_peak_nodes_s"]
    c.print(
        f"{peak_needs(s)}; "
        + (
            f"{'the max was ' if s['peak_nodes_needed'] > s['nodes_max_at_peak'] else ''}reached {ttp:g} s after the load first exceeded "
            "the serving nodes"
            if ttp is not None
            else "no shortfall to recover from"
            if s["peak_serving"] >= s["peak_nodes_needed"]
            else "never reached"
        )
    )
    c.print(f"{over_slo(s)}; peak queue {s['peak_queue']:g}; worst p95 wait {s['p95_wait_s_max']:g} s")
    if end := backlog(s):
        c.print(end)
    c.print(
        f"scale events: {s['scale_outs']} out, {s['scale_ins']} in; node-hours "
        + ", ".join(f"{k} {v:g}" for k, v in s["node_hours"].items())
    )
    cost = s.get("cost")
    if cost:
        c.print(
            f"cost of the trace: {figures.at_least(cost['total'], cost['complete'])} {cost['currency']}"
            + (f", {cost['per_million_output_tokens']} per million output tokens" if cost["per_million_output_tokens"] else "")
            + f" (prices as of {cost['prices_as_of']})"
        )
    c.print(f"declared reaction: {doc['declared']['reaction_s']:g} s ({doc['declared']['reaction']})")
    for n in doc["notes"]:
        c.print(f"  note: {n}")


def _path(xs: list[float], ys: list[float], x0: float, x1: float, y1: float, w: float, h: float, pad: float) -> str:
    pts = []
    for x, y in zip(xs, ys):
        px = pad + (x - x0) / max(x1 - x0, 1e-9) * (w - 2 * pad)
        py = h - pad - (y / y1 if y1 > 0 else 0) * (h - 2 * pad)
        pts.append(f"{px:.1f},{py:.1f}")
    return " ".join(pts)


def chart_html(doc: dict) -> str:
    tl = doc["timeline"]
    idx = _sampled(len(tl), 1500)
    xs = [tl[i]["t_s"] / 3600 for i in idx]
    x0, x1 = (xs[0], xs[-1]) if xs else (0.0, 1.0)
    w, h, pad = 960.0, 240.0, 40.0
    s = doc["summary"]

    def panel(title: str, series: list[tuple[str, list[float], str]], line: tuple[str, float] | None = None) -> str:
        top = max([max(v, default=0) for _, v, _ in series] + [line[1] if line else 0] + [1e-9]) * 1.1
        body = [f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#ccc"/>']
        body.append(f'<text x="{pad}" y="{pad - 12}" font-size="14" font-weight="bold">{html.escape(title)}</text>')
        body.append(f'<text x="4" y="{pad + 4}" font-size="11">{top:.3g}</text><text x="4" y="{h - pad}" font-size="11">0</text>')
        for k, (name, v, colour) in enumerate(series):
            body.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{_path(xs, v, x0, x1, top, w, h, pad)}"/>'
            )
            body.append(
                f'<text x="{w - pad - 200}" y="{pad + 14 + 14 * k}" font-size="12" fill="{colour}">{html.escape(name)}</text>'
            )
        if line:
            py = h - pad - line[1] / top * (h - 2 * pad)
            body.append(f'<line x1="{pad}" x2="{w - pad}" y1="{py:.1f}" y2="{py:.1f}" stroke="#d62728" stroke-dasharray="6 4"/>')
            body.append(f'<text x="{pad + 4}" y="{py - 4:.1f}" font-size="12" fill="#d62728">{html.escape(line[0])}</text>')
        for k in range(int(x0), int(x1) + 1, max(1, int((x1 - x0) / 12) or 1)):
            px = pad + (k - x0) / max(x1 - x0, 1e-9) * (w - 2 * pad)
            body.append(f'<text x="{px:.1f}" y="{h - pad + 16}" font-size="11" text-anchor="middle">{k} h</text>')
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:g}" height="{h:g}" role="img" aria-label="{html.escape(title)}">{"".join(body)}</svg>'

    arrivals = [tl[i]["arrivals_per_s"] for i in idx]
    serving = [tl[i]["serving"] for i in idx]
    booting = [tl[i]["booting"] + tl[i]["waiting_on_hook"] for i in idx]
    qpn = [tl[i]["queue_per_node"] for i in idx]
    ttft = [tl[i]["ttft_s"] if tl[i]["ttft_s"] is not None else 0.0 for i in idx]
    slo = s["slo_ttft_ms"]
    cost = s.get("cost") or {}
    facts = [
        peak_needs(s),
        f"time to peak nodes: {'-' if s['time_to_peak_nodes_s'] is None else str(s['time_to_peak_nodes_s']) + ' s'}",
        over_slo(s),
        f"peak queue: {s['peak_queue']:g}; worst p95 wait: {s['p95_wait_s_max']:g} s",
        *([end] if (end := backlog(s)) else []),
        f"scale events: {s['scale_outs']} out, {s['scale_ins']} in",
        "node-hours: " + ", ".join(f"{k} {v:g}" for k, v in s["node_hours"].items()),
    ]
    if cost:
        facts.append(f"cost: {'' if cost['complete'] else '&ge; '}{cost['total']} {cost['currency']}")
    panels = [
        panel("arrivals (requests/s)", [("arrivals", arrivals, "#1f77b4")]),
        panel("nodes", [("serving", serving, "#2ca02c"), ("booting or held by a hook", booting, "#ff7f0e")]),
        panel("queue per serving node", [("waiting requests per node", qpn, "#9467bd")]),
        panel("TTFT estimate (s)", [("TTFT p95 estimate", ttft, "#8c564b")], (f"SLO {slo:g} ms", slo / 1000) if slo else None),
    ]
    items = "".join(f"<li>{f}</li>" for f in facts)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in doc["notes"])
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>gpufleet plan scaling: "
        + html.escape(doc["stack"])
        + "</title><style>body{font-family:sans-serif;margin:16px}svg{display:block;margin:8px 0}</style></head><body>"
        + f"<h1>{html.escape(doc['stack'])}: a simulated {html.escape(doc['trace']['source'])}</h1>"
        + f"<ul>{items}</ul>"
        + "".join(panels)
        + (f"<h2>notes</h2><ul>{notes}</ul>" if notes else "")
        + "<p>Simulated from the resources the program declares (gpufleet plan scaling); timings and their sources in the JSON output.</p>"
        + "</body></html>"
    )
