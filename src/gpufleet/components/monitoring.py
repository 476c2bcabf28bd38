"""Monitoring as files the operators' tools read (docs/monitoring.md): Prometheus alerting rules rendered per stack
from the spec's alarms.* and a Grafana dashboard for the vLLM, GPU and node metrics the gateway's metrics port serves.

Every metric name in the PromQL is checked against the names the pinned software exports
(components/data/metric_names.yaml: vLLM read from its wheels, dcgm-exporter's default-counters.csv, node_exporter's
source), and every expression is checked by `promtool check rules` in tests/monitoring.

Series carry the labels of `scrape_labels` (set by the operators' scrape config: the node serves its metrics without
them): FLEET_LABEL the fleet's prefix (e.g. llm-prod), CLOUD_LABEL and REGION_LABEL where it runs. Every expression
selects all three, and the files are named by them (`key`), so that the fleets of several stacks can live in one
Prometheus: `region new` names the fleet llm in every region, so two regions' prod fleets are both llm-prod.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import yaml

from gpufleet import inputs
from gpufleet.images.recipes import fleet_recipe
from gpufleet.naming import fit

METRIC_NAMES = Path(__file__).parent / "data" / "metric_names.yaml"
FLEET_LABEL = "gpufleet_fleet"
CLOUD_LABEL = "gpufleet_cloud"
REGION_LABEL = "gpufleet_region"
# The dashboard's latency percentile: a display choice, not an alarm threshold (alarms come from the spec).
LATENCY_QUANTILE = 0.95
RATE_WINDOW = "5m"  # the dashboard's rate() window
GRAFANA_UID_MAX = 40  # Grafana's dashboard uid: at most 40 characters


def vllm_version(fleet) -> str:
    return fleet_recipe(fleet.spec).pins["vllm"]


def scrape_labels(fleet) -> dict[str, str]:
    """The labels the scrape config puts on the fleet's series, which every expression selects (docs/monitoring.md)."""
    return {FLEET_LABEL: fleet.prefix, CLOUD_LABEL: fleet.spec.cloud, REGION_LABEL: fleet.spec.region}


def key(fleet) -> str:
    """What tells the fleet's files and rule group from another stack's: its prefix, cloud and region (the labels)."""
    return f"{fleet.prefix}-{fleet.spec.cloud}-{fleet.spec.region}"


def _sel(fleet, extra: str = "") -> str:
    return "{" + ",".join([*(f'{k}="{v}"' for k, v in scrape_labels(fleet).items()), *([extra] if extra else [])]) + "}"


def alert_rules(fleet) -> dict:
    """The Prometheus rule file for one fleet: thresholds and durations from fleet.spec.alarms."""
    a, s = fleet.spec.alarms, _sel(fleet)
    labels = {"severity": "warning", "fleet": fleet.prefix}
    util, mem, queue = a.gpu_utilization, a.gpu_memory, a.vllm_queue
    return {
        "groups": [
            {
                "name": f"gpufleet-{key(fleet)}",
                "rules": [
                    {
                        "alert": "GpuUtilizationHigh",
                        "expr": f"DCGM_FI_DEV_GPU_UTIL{s} > {util.threshold_percent:g}",
                        "for": f"{util.minutes}m",
                        "labels": labels,
                        "annotations": {
                            "summary": f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.instance }}}} above {util.threshold_percent:g}% "
                            f"utilisation for {util.minutes} min",
                            "source": "fleet spec alarms.gpu_utilization",
                        },
                    },
                    {
                        "alert": "GpuMemoryHigh",
                        "expr": f"100 * DCGM_FI_DEV_FB_USED{s} / (DCGM_FI_DEV_FB_USED{s} + DCGM_FI_DEV_FB_FREE{s}) "
                        f"> {mem.threshold_percent:g}",
                        "for": f"{mem.minutes}m",
                        "labels": labels,
                        "annotations": {
                            "summary": f"GPU {{{{ $labels.gpu }}}} on {{{{ $labels.instance }}}} above {mem.threshold_percent:g}% "
                            f"memory for {mem.minutes} min",
                            "source": "fleet spec alarms.gpu_memory",
                        },
                    },
                    {
                        "alert": "VllmQueueLong",
                        "expr": f"vllm:num_requests_waiting{s} > {queue.waiting_above}",
                        "for": f"{queue.minutes}m",
                        "labels": labels,
                        "annotations": {
                            "summary": f"vLLM on {{{{ $labels.instance }}}} has more than {queue.waiting_above} requests "
                            f"waiting for {queue.minutes} min",
                            "source": "fleet spec alarms.vllm_queue",
                        },
                    },
                ],
            }
        ]
    }


def dashboard_panels(fleet) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(title, Grafana unit, [(PromQL, legend)]) of each dashboard panel."""
    s, w, q = _sel(fleet), RATE_WINDOW, LATENCY_QUANTILE
    idle = _sel(fleet, 'mode="idle"')
    disks = _sel(fleet, 'fstype!~"tmpfs|overlay"')
    return [
        (
            "vLLM requests running / waiting",
            "short",
            [
                (f"sum by (instance) (vllm:num_requests_running{s})", "running {{instance}}"),
                (f"sum by (instance) (vllm:num_requests_waiting{s})", "waiting {{instance}}"),
            ],
        ),
        ("vLLM KV cache usage", "percentunit", [(f"vllm:kv_cache_usage_perc{s}", "{{instance}}")]),
        (
            "vLLM tokens per second",
            "short",
            [
                (f"sum by (instance) (rate(vllm:prompt_tokens_total{s}[{w}]))", "prompt {{instance}}"),
                (f"sum by (instance) (rate(vllm:generation_tokens_total{s}[{w}]))", "generation {{instance}}"),
            ],
        ),
        (
            f"vLLM time to first token (p{round(q * 100)})",
            "s",
            [(f"histogram_quantile({q}, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{s}[{w}])))", "ttft")],
        ),
        (
            f"vLLM end-to-end latency (p{round(q * 100)})",
            "s",
            [(f"histogram_quantile({q}, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{s}[{w}])))", "e2e")],
        ),
        ("GPU utilisation", "percent", [(f"DCGM_FI_DEV_GPU_UTIL{s}", "{{instance}} gpu {{gpu}}")]),
        (
            "GPU memory used",
            "percent",
            [(f"100 * DCGM_FI_DEV_FB_USED{s} / (DCGM_FI_DEV_FB_USED{s} + DCGM_FI_DEV_FB_FREE{s})", "{{instance}} gpu {{gpu}}")],
        ),
        ("GPU power", "watt", [(f"DCGM_FI_DEV_POWER_USAGE{s}", "{{instance}} gpu {{gpu}}")]),
        ("GPU temperature", "celsius", [(f"DCGM_FI_DEV_GPU_TEMP{s}", "{{instance}} gpu {{gpu}}")]),
        (
            "Node CPU busy",
            "percentunit",
            [(f"1 - avg by (instance) (rate(node_cpu_seconds_total{idle}[{w}]))", "{{instance}}")],
        ),
        (
            "Node memory used",
            "percentunit",
            [(f"1 - node_memory_MemAvailable_bytes{s} / node_memory_MemTotal_bytes{s}", "{{instance}}")],
        ),
        (
            "Node disk free",
            "bytes",
            [(f"node_filesystem_avail_bytes{disks}", "{{instance}} {{mountpoint}}")],
        ),
        (
            "Node network",
            "Bps",
            [
                (f"sum by (instance) (rate(node_network_receive_bytes_total{s}[{w}]))", "in {{instance}}"),
                (f"sum by (instance) (rate(node_network_transmit_bytes_total{s}[{w}]))", "out {{instance}}"),
            ],
        ),
    ]


def dashboard(fleet) -> dict:
    """A Grafana dashboard (JSON model) with a Prometheus data-source variable."""
    panels = []
    for i, (title, unit, targets) in enumerate(dashboard_panels(fleet)):
        panels.append(
            {
                "id": i + 1,
                "type": "timeseries",
                "title": title,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [
                    {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend} for j, (expr, legend) in enumerate(targets)
                ],
            }
        )
    return {
        "title": f"gpufleet {fleet.prefix} ({fleet.spec.cloud} {fleet.spec.region})",
        "uid": fit(f"gpufleet-{key(fleet)}", GRAFANA_UID_MAX),  # cut with a digest: two regions' never meet
        "tags": ["gpufleet", fleet.spec.cloud, fleet.spec.environment],
        "timezone": "utc",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": panels,
    }


def expressions(fleet) -> list[str]:
    """Every PromQL expression of the rules and the dashboard."""
    rules = [r["expr"] for g in alert_rules(fleet)["groups"] for r in g["rules"]]
    return rules + [expr for _, _, targets in dashboard_panels(fleet) for expr, _ in targets]


def expressions_as_rules(fleet) -> dict:
    """The dashboard's expressions wrapped as recording rules, so that `promtool check rules` parses each one."""
    exprs = [expr for _, _, targets in dashboard_panels(fleet) for expr, _ in targets]
    return {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"gpufleet:dashboard:{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }


@cache
def _names() -> dict:
    return inputs.load_mapping(METRIC_NAMES, "components/data/metric_names.yaml")


def exported_names(vllm: str) -> set[str]:
    """Every series name the pinned vLLM, dcgm-exporter and node_exporter export (with prometheus_client suffixes)."""
    data = _names()
    if vllm not in data["vllm"]:
        raise KeyError(
            f"no vLLM {vllm} metric list in {METRIC_NAMES.name}: run scripts/vllm_metric_names.py (a script of a gpufleet "
            "checkout, the repository; an installed gpufleet has none) on its wheel"
        )
    out: set[str] = set()
    suffixes = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"), "gauge": ("",)}
    for name, facts in data["vllm"][vllm]["metrics"].items():
        out |= {name + suffix for suffix in suffixes[facts["type"]]}
    for section in ("dcgm_exporter", "node_exporter"):
        out |= set(data[section]["metrics"])
    return out


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACES = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_WORD = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads (functions, keywords, label names and literals removed)."""
    text = _GROUPING.sub(" ", _RANGES.sub(" ", _BRACES.sub(" ", _STRINGS.sub(" ", expr))))
    out = set()
    for m in _WORD.finditer(text):
        after = text[m.end() :].lstrip()
        if after.startswith("(") or m.group(0).lower() in _KEYWORDS:
            continue
        out.add(m.group(0))
    return out


def unknown_metrics(fleet, vllm: str | None = None) -> list[str]:
    """Names used in the rules or the dashboard that the pinned software (or vLLM `vllm`) does not export."""
    known = exported_names(vllm or vllm_version(fleet))
    return sorted({n for e in expressions(fleet) for n in metric_names(e)} - known)


def files(fleet) -> dict[str, str]:
    """{file name: text} for the operators: the rule file (headed by the labels to scrape the nodes with) and the
    dashboard, named gpufleet-<prefix>-<cloud>-<region> (`key`)."""
    labels = ", ".join(f"{k}: {v}" for k, v in scrape_labels(fleet).items())
    head = f"# every expression selects the labels the scrape config puts on this fleet's nodes: {{{labels}}}\n"
    return {
        f"gpufleet-{key(fleet)}.rules.yml": head + yaml.safe_dump(alert_rules(fleet), sort_keys=False),
        f"gpufleet-{key(fleet)}.dashboard.json": json.dumps(dashboard(fleet), indent=2) + "\n",
    }
