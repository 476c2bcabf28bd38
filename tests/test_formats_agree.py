"""Every format a command prints says the same numbers (issue 27 item 4): cost estimate, compare, report, diff, commit,
tokens, reconcile, budget; preview, check, plan fit, plan capacity, plan scaling's cost; image lock show.

For every shipped stack each command is run in-process in every format it offers; the JSON is taken as the data
(decimal strings, `complete`, a `high` of null when a line has no price) and every other format is read back and
compared with it: the text formats (table, HTML, Markdown) must show the figure exactly as cost/figures.py writes
it, CSV and XLSX must hold the same decimals, and no format may show a high end the JSON says does not exist.
"""

from __future__ import annotations

import csv
import io
import json
import re
from decimal import Decimal
from html import unescape
from pathlib import Path

import pytest
import yaml

from gpufleet.cost import figures
from gpufleet.cost.resources import CATEGORIES

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def run(argv: list, capsys) -> str:
    from gpufleet.cli import main

    capsys.readouterr()
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        assert exc.code in (0, None, 1), capsys.readouterr()
    return capsys.readouterr().out


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # a table never wraps a figure: the text can be searched for it


def text_of_html(html: str) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def _amount(a: dict) -> str:
    """An amount of the JSON (`by_category` entry) as figures.py writes it."""
    high = Decimal(a["high"]) if a["high"] is not None else None
    return figures.amount(Decimal(a["amount"]), Decimal(a["low"]), high, a["complete"])


def _no_ascii_bound(*texts: str) -> None:
    for t in texts:
        assert ">= " not in t, t[t.index(">= ") - 80 : t.index(">= ") + 80]


def _xlsx_cells(path: Path) -> dict[str, list[list]]:
    import openpyxl

    wb = openpyxl.load_workbook(path, data_only=True)  # the cached values: what a viewer shows without recalculating
    return {ws.title: [list(r) for r in ws.iter_rows(values_only=True)] for ws in wb.worksheets}


def _money(x) -> Decimal:
    return Decimal(str(x)).quantize(Decimal("0.01"))


# --- cost estimate -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_cost_estimate_formats_agree(stack, capsys, tmp_path):
    j = json.loads(run(["cost", "estimate", "-s", stack, "--json"], capsys))
    table = run(["cost", "estimate", "-s", stack], capsys)
    rows = list(csv.DictReader(io.StringIO(run(["cost", "estimate", "-s", stack, "--format", "csv"], capsys))))
    html = text_of_html(run(["cost", "estimate", "-s", stack, "--format", "html"], capsys))
    run(["cost", "estimate", "-s", stack, "--format", "xlsx", "-o", tmp_path / "e.xlsx"], capsys)
    sheets = _xlsx_cells(tmp_path / "e.xlsx")
    cur, complete = j["currency"], j["complete"]
    total = Decimal(j["monthly_total"])
    low, high = Decimal(j["range"]["low"]), j["range"]["high"]
    assert (high is None) == (not complete)

    # table: the total and each category, as figures.py writes them
    shown = figures.amount(total, low, Decimal(high) if high is not None else None, complete)
    assert f"monthly total {shown} {cur}" in table
    for c, a in j["by_category"].items():
        assert f"{c} {_amount(a)}" in table, c
    for k, s in j["scenarios"].items():
        rng = s["range"]
        want = figures.amount(
            Decimal(s["monthly_total"]), Decimal(rng["low"]), Decimal(rng["high"]) if rng["high"] else None, s["complete"]
        )
        assert re.search(rf"│ {k.replace('_', ' ')}\s+│[^│]+│\s+{re.escape(want)} │", table), (k, want)

    # CSV: the total and category rows hold the JSON's decimals; a high end row only where the JSON has one
    by_row = {(r["row"], r["component"]): r for r in rows}
    total_row = next(r for r in rows if r["row"] == "total")
    assert Decimal(total_row["total_amount"]) == total and total_row["status"] == ("complete" if complete else "incomplete")
    assert Decimal(by_row[("total range", "monthly total, low")]["total_amount"]) == low
    highs = [r for r in rows if r["component"] == "monthly total, high"]
    assert [Decimal(r["total_amount"]) for r in highs] == ([Decimal(high)] if high is not None else [])
    cats = {r["category"]: r for r in rows if r["row"] == "category"}
    for c, a in j["by_category"].items():
        assert Decimal(cats[c]["total_amount"]) == Decimal(a["amount"])
        assert cats[c]["status"] == ("complete" if a["complete"] else "incomplete")
    assert sum(Decimal(r["monthly_cost"]) for r in rows if r["row"] == "line" and r["monthly_cost"]) == total

    # HTML: the same texts (the total, each category's lower bound, the spread)
    assert figures.at_least(total, complete) in html
    assert figures.span(low, high) in html
    for a in j["by_category"].values():
        assert figures.at_least(a["amount"], a["complete"]) in html

    # XLSX: the Summary's cached category and total cells are the JSON's amounts, labelled as a lower bound alike
    summary = sheets["Summary"]
    got = {r[0]: r[1] for r in summary if r and r[0] in CATEGORIES}
    assert {c: _money(v) for c, v in got.items()} == {c: Decimal(a["amount"]) for c, a in j["by_category"].items()}
    label = "monthly total" if complete else f"monthly total ({figures.SIGN}, lower bound)"
    assert _money(next(r[1] for r in summary if r and r[0] == label)) == total
    _no_ascii_bound(table, html, *(str(c) for s in sheets.values() for r in s for c in r if c is not None))


# --- cost compare ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [s for s in STACKS if s.endswith("-prod")])
def test_cost_compare_formats_agree(stack, capsys, tmp_path):
    args = ["cost", "compare", "-s", stack, "--billing", "payg,yearly"]
    j = json.loads(run([*args, "--json"], capsys))
    table = run(args, capsys)
    rows = {
        f"{r['cloud']} {r['region']} {r['billing']}": r
        for r in csv.DictReader(io.StringIO(run([*args, "--format", "csv"], capsys)))
    }
    html = text_of_html(run([*args, "--format", "html"], capsys))
    run([*args, "--format", "xlsx", "-o", tmp_path / "c.xlsx"], capsys)
    sheets = _xlsx_cells(tmp_path / "c.xlsx")
    summary = {r[0]: r for r in sheets["Summary"] if r and isinstance(r[0], str)}
    header = next(r for r in sheets["Summary"] if r and r[0] == "option")
    options = [o for o in j["rows"] if o["monthly_total"] is not None]
    assert options
    for o in options:
        name = f"{o['cloud']} {o['region']} {o['billing']}"
        total, complete, rng = Decimal(o["monthly_total"]), o["complete"], o["range"]
        high = Decimal(rng["high"]) if rng["high"] is not None else None
        assert (high is None) == (not complete)
        shown = figures.amount(total, Decimal(rng["low"]), high, complete)
        assert re.search(rf"│ {re.escape(name)}\s+│.*│\s+{re.escape(shown)} │", table), (name, shown)
        r = rows[name]
        assert Decimal(r["monthly_total"]) == total and r["complete"] == str(complete).lower()
        assert Decimal(r["monthly_low"]) == Decimal(rng["low"]) and r["monthly_high"] == (rng["high"] or "")
        for c, a in o["by_category"].items():
            assert Decimal(r[c]) == Decimal(a["amount"])
            assert figures.at_least(a["amount"], a["complete"]) in html
        assert figures.at_least(total, complete) in html
        assert figures.span(rng["low"], rng["high"]) in html
        cells = dict(zip(header, summary[name]))
        assert _money(cells["monthly total"]) == total
        assert {c: _money(cells[c]) for c in CATEGORIES} == {c: Decimal(a["amount"]) for c, a in o["by_category"].items()}
        assert cells["complete"] == ("yes" if complete else f"no (total is {figures.SIGN})")
    for sheet, cells in sheets.items():  # an option's own sheet: no high end cell where the JSON has none
        if sheet[:1].isdigit():
            total_row = next(r for r in cells if r and str(r[0]).startswith("monthly total"))
            opt = options[int(sheet.split()[0]) - 1]
            assert _money(total_row[6]) == Decimal(opt["monthly_total"])
            assert (total_row[10] == "none: lines without a price") == (not opt["complete"])
    _no_ascii_bound(table, html)


# --- cost report --all -------------------------------------------------------------------------------------------


def test_cost_report_formats_agree(capsys):
    j = json.loads(run(["cost", "report", "--all", "--json"], capsys))
    table = run(["cost", "report", "--all"], capsys)
    rows = list(csv.DictReader(io.StringIO(run(["cost", "report", "--all", "--format", "csv"], capsys))))
    groups = [*j["groups"], j["shared"], j["total"]]
    for g in groups:
        shown = figures.at_least(g["monthly_total"], g["complete"])
        assert re.search(rf"│ {re.escape(g['name'])}\s+│\s+\d+ │\s+{re.escape(shown)} │", table), (g["name"], shown)
        r = next(r for r in rows if r["team"] == g["name"])
        assert Decimal(r["monthly_total"]) == Decimal(g["monthly_total"]) and r["complete"] == str(g["complete"]).lower()
    assert not j["total"]["complete"]  # the shipped stacks have unpriced lines: the check below can fail
    _no_ascii_bound(table)


# --- cost diff ---------------------------------------------------------------------------------------------------

PAIRS = [(a, b) for a in STACKS for b in STACKS if a.rsplit("-", 1)[0] == b.rsplit("-", 1)[0] and a.endswith("-dev") and b != a]


def _change(d: dict) -> str:
    dec = lambda x: None if x is None else Decimal(x)  # noqa: E731
    return figures.change(dec(d["value"]), dec(d["low"]), dec(d["high"]))


@pytest.mark.parametrize(("a", "b"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_cost_diff_formats_agree(a, b, capsys):
    args = ["cost", "diff", "-s", a, "-s", b]
    j = json.loads(run([*args, "--json"], capsys))
    table = run(args, capsys)
    md = run([*args, "--format", "markdown"], capsys)
    delta = _change(j["delta"])
    assert re.search(rf"CNY/month: (increase |saving )?{re.escape(delta)}[;\s]", table), delta
    assert f"**{delta}**" in md
    for c, d in j["by_category"].items():
        assert re.search(rf"│ {c}\s+│[^│]+│[^│]+│\s+{re.escape(_change(d['delta']))} │", table), c
        assert f"| {c} | " in md and f"| {_change(d['delta'])} |" in md
    for u in j["unpriced_deltas"]:
        assert _change(u["delta"]) in table and _change(u["delta"]) in md
    for text in (table, md):
        assert "∞" not in text and "unknown (" not in text  # a bound in words, never an interval to infinity
    _no_ascii_bound(table, md)


# --- cost commit ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_cost_commit_formats_agree(stack, capsys):
    j = json.loads(run(["cost", "commit", "-s", stack, "--json"], capsys))
    table = run(["cost", "commit", "-s", stack], capsys)
    for n in j["nodes"]:
        cells = rf"│\s+{n['node']} │\s+{re.escape(n['hours_per_month'])} │[^│]+│ {n['choice']}\s+│\s+{n['monthly_cost']} │"
        assert re.search(cells, table), n
    assert f": {j['monthly_cost']} " in table and f"upfront for a yearly term: {j['upfront_yearly']} " in table


# --- cost tokens, cost reconcile -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_cost_tokens_formats_agree(stack, capsys):
    args = ["cost", "tokens", "-s", stack, "--from-loadtest", ROOT / "examples" / "loadtest-example.json", "--peak-qps", "40"]
    j = json.loads(run([*args, "--json"], capsys))
    table = run(args, capsys)
    for b in j["billing"]:
        first = True
        for p in b["points"]:
            million = figures.rounded(Decimal(p["per_million_output_tokens"]), 2) if p["per_million_output_tokens"] else "-"
            request = figures.rounded(Decimal(p["per_request"]), 6) if p["per_request"] else "-"
            head = (
                rf"│ {re.escape(b['billing'])}\*?\s+│\s+{re.escape(b['node_monthly'] or 'unpriced')} │" if first else r"│\s+│\s+│"
            )
            row = rf"{head} {re.escape(p['label'])}\s+│\s+{re.escape(p['output_tokens_per_s'])} │\s+{million} │\s+{request} │"
            assert re.search(row, table), (b["billing"], p)
            first = False


BILLS = sorted((ROOT / "examples").glob("bill-*-example.csv"))


def _variance(x: dict) -> str:
    """A reconciled variance as the text says it: a change, one-sided (`at most`) against a lower-bound estimate."""
    v = Decimal(x["variance"])
    return figures.change(v, v, v) if x["estimate_complete"] else figures.change(None, None, v)


@pytest.mark.parametrize("bill", BILLS, ids=[b.name for b in BILLS])
def test_cost_reconcile_formats_agree(bill, capsys):
    cloud = bill.name.split("-")[1]
    stack = next(s for s in STACKS if s.startswith(cloud) and s.endswith("-prod"))
    j = json.loads(run(["cost", "reconcile", "-s", stack, "--bill", bill, "--json"], capsys))
    text = run(["cost", "reconcile", "-s", stack, "--bill", bill], capsys)
    assert j["resources"]
    for x in j["resources"]:
        est = figures.at_least(x["estimate"], x["estimate_complete"])
        assert re.search(rf"\s{re.escape(est)}\s+{re.escape(x['bill'])}\s+{re.escape(_variance(x))}\s", text), x
    for c, x in j["categories"].items():
        est = figures.at_least(x["estimate"], x["estimate_complete"])
        assert re.search(
            rf"  {re.escape(c)}\s+estimate\s+{re.escape(est)}\s+bill\s+{re.escape(x['bill'])}\s+variance\s+{re.escape(_variance(x))}\n",
            text,
        ), (c, x)
    assert j["shared"]
    for x in j["shared"]:  # each shared cost: the whole, and this stack's part as cost report --all allocates it
        whole = figures.UNPRICED if x["estimate"] is None else x["estimate"]
        part = "no part while unpriced" if x["allocated_to_stack"] is None else f"this stack's part {x['allocated_to_stack']}"
        assert f"{x['resource']}: {x['component']} ({x['category']}): {whole}, declared by {len(x['stacks'])} stack" in text
        assert part in text.split(f"{x['resource']}: {x['component']} (", 1)[1].split("\n", 1)[0], x
    _no_ascii_bound(text)


# --- plan scaling: the trace's cost -----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", [s for s in STACKS if s.endswith("-dev")])
def test_plan_scaling_cost_formats_agree(stack, capsys):
    args = ["plan", "scaling", "-s", stack, "--from-loadtest", ROOT / "examples" / "loadtest-example.json", "--profile", "step"]
    cost = json.loads(run([*args, "--json"], capsys))["summary"]["cost"]
    table = run(args, capsys)
    assert f"cost of the trace: {figures.at_least(cost['total'], cost['complete'])} {cost['currency']}" in table
    _no_ascii_bound(table)


# --- preview and check: the counts and notes the tree prints are the JSON's --------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_preview_formats_agree(stack, capsys):
    text = run(["preview", "-s", stack, "--json"], capsys)
    j = json.loads(text)
    tree = run(["preview", "-s", stack], capsys)
    custom = sum(1 for r in j["resources"] if r["custom"])
    components = sum(1 for r in j["resources"] if not r["custom"])
    assert f"\n{custom} resources ({components} components)\n" in tree
    for r in j["resources"]:
        assert f"{r['type']}  {r['name']}" in tree, r["name"]
    flat = " ".join(tree.split())
    for n in j["notes"]:
        assert "note " + " ".join(n.split()) in flat, n

    # the JSON's keys are sorted at every level, so that saved inventories compare line by line whatever order the
    # program declared things in; it holds the stack outputs program.py declares (docs/adding-a-cloud.md), each of
    # which the tree prints on a line of its own
    assert text == json.dumps(j, indent=2, sort_keys=True) + "\n"
    assert set(j) == {"stack", "resources", "outputs", "notes"} and j["stack"] == stack
    assert set(j["outputs"]) == {"endpoint", "vpc_id", "scaling_group_id", "security_group_ids"}
    for key, value in j["outputs"].items():
        assert f"\n  output {key} = {value}\n" in tree, key
    # the tree's first line is the stack file's fleet; with TLS the endpoint is https://<tls.domain> (docs/tls.md)
    fleet = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]["gpufleet:fleet"]
    replicas, gpu = fleet["replicas"], fleet["gpu"]
    head = tree.splitlines()[0]
    assert head.startswith(f"{stack}  {fleet['cloud']} {fleet['region']}  {replicas['min']}-{replicas['max']}x "), head
    assert head.endswith(f" ({gpu['count']}x {gpu['kind']})  billing {fleet['billing']['model']}"), head
    if tls := fleet.get("load_balancer", {}).get("tls"):
        assert j["outputs"]["endpoint"] == f"https://{tls['domain']}"


@pytest.mark.parametrize("cloud", sorted({s.split("-")[0] for s in STACKS}))
def test_check_formats_agree(cloud, capsys):
    j = json.loads(run(["check", "--cloud", cloud, "--json"], capsys))
    text = run(["check", "--cloud", cloud], capsys)
    stacks = j["stacks"][cloud]
    assert f"{cloud}: {len(stacks)} stacks previewed together ({', '.join(stacks)}): {j['names']} names, " in text
    assert f"{j['account_or_region_scoped']} account- or region-wide" in text and (not j["clashes"]) == (
        "no name used twice" in text
    )


def test_cost_budget_formats_agree(capsys):
    args = ["cost", "budget", "--budgets", ROOT / "examples" / "budgets-example.yaml", "--allow-unpriced"]
    j = json.loads(run([*args, "--json"], capsys))
    text = run(args, capsys)
    assert text.splitlines() == [f"{t['name']}: {t['message']}" for t in j["teams"]]
    for t in j["teams"]:
        assert figures.at_least(t["monthly_with_shared"], t["complete"]) in t["message"]
    _no_ascii_bound(text)


# --- plan capacity, image lock show ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_plan_capacity_formats_agree(stack, capsys):
    args = ["plan", "capacity", "--peak-qps", "40", "--qps-per-node", "6", "-s", stack]
    j = json.loads(run([*args, "--json"], capsys))
    text = run(args, capsys)
    head = f"{j['nodes']} nodes for {j['peak_qps']:g} QPS at {j['qps_per_node']:g} QPS per node ({j['qps_source']}), N+{j['redundancy']}"
    assert head in text
    assert f"replicas: min {j['min_replicas']}, max {j['max_replicas']}, desired at peak {j['desired']}" in text


def test_image_lock_show_formats_agree(capsys):
    j = json.loads(run(["image", "lock", "show", "--json"], capsys))
    table = run(["image", "lock", "show"], capsys)
    for e in j:
        state = "placeholder" if e["placeholder"] else "built"
        row = rf"│ {re.escape(e['recipe'])}\s+│ {e['cloud']}\s+│ {e['region']}\s+│ {re.escape(e['image_id'])}\s+│ {state}"
        assert re.search(row, table), e


# --- plan fit: the table shows the JSON's figures, rounded for display only -------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_plan_fit_formats_agree(stack, capsys):
    """The JSON carries full precision; every figure the table prints is the JSON's, rounded as the table rounds it
    (2 decimals for GiB and concurrency), and every verdict, problem, advice and assumption line is the JSON's."""
    j = json.loads(run(["plan", "fit", "--stack", stack, "--json"], capsys))
    table = run(["plan", "fit", "--stack", stack], capsys)
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)]
        if len(cells) > 3 and cells[1] and re.fullmatch(r"-?\d+\.\d\d", cells[2]):
            rows[cells[1]] = cells[2]
    assert rows, table
    for term in j["terms"]:
        assert rows.get(term["name"]) == f"{term['gib']:.2f}", (term, rows.get(term["name"]))
    assert rows["kv_cache"] == f"{j['kv_cache_gib']:.2f}" and rows["weights"] == f"{j['weights_gib']:.2f}"
    flat = " ".join(table.split())
    assert (
        f"KV cache: {j['kv_tokens']} tokens ({j['kv_bytes_per_token']} B/token per GPU); "
        f"{j['max_concurrency']:.2f}x concurrency at max_model_len {j['max_model_len']}"
    ) in flat
    low, high = j["kv_tokens_range"]
    assert f"KV tokens within the model's error: {low}-{high}" in flat
    assert j["verdict"] in table.splitlines()
    for kind in ("problems", "advice", "assumptions"):
        for line in j[kind]:
            assert " ".join(line.split()) in flat, (kind, line)
    # the JSON is not rounded: a figure the table rounds keeps its digits (a KV cache of whole hundredths is unlikely)
    assert any(len(repr(t["gib"]).split(".")[-1]) > 3 for t in j["terms"]), j["terms"]
