"""Monitoring files (issue 14 item 5): rules rendered per stack from alarms.* and checked by `promtool check rules`,
the dashboard's PromQL wrapped as recording rules for promtool, every metric name checked against the lists read
from the pinned vLLM wheels, dcgm-exporter's default counters and node_exporter's source."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from tools import require

from gpufleet import validation
from gpufleet.components import monitoring
from gpufleet.stacks import loader

ROOT = Path(__file__).resolve().parents[2]
STACKS = loader.stack_names(ROOT)


def fleet(stack: str = "alicloud-cn-hangzhou-prod", **alarms):
    f = validation.load_fleet(stack, ROOT, sizing=False)
    if not alarms:
        return f
    _, config = loader.read_stack_config(stack, ROOT)
    raw = copy.deepcopy(config[loader.CONFIG_KEY])
    raw.setdefault("alarms", {}).update(alarms)
    return validation.validate(raw, stack=stack, file="x", sizing=False)


def promtool_check(tmp_path: Path, doc: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return subprocess.run(
        [require("promtool", "prometheus"), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("stack", STACKS)
def test_alert_rules_pass_promtool(stack, tmp_path):
    result = promtool_check(tmp_path, monitoring.alert_rules(fleet(stack)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 3 rules found" in result.stdout


@pytest.mark.parametrize("stack", STACKS)
def test_dashboard_expressions_pass_promtool(stack, tmp_path):
    f = fleet(stack)
    doc = monitoring.expressions_as_rules(f)
    result = promtool_check(tmp_path, doc)
    assert result.returncode == 0, result.stdout + result.stderr
    panel_exprs = [t["expr"] for p in monitoring.dashboard(f)["panels"] for t in p["targets"]]
    assert [r["expr"] for r in doc["groups"][0]["rules"]] == panel_exprs


def test_promtool_check_can_fail(tmp_path):
    doc = monitoring.expressions_as_rules(fleet())
    doc["groups"][0]["rules"][0]["expr"] += " by ("
    assert promtool_check(tmp_path, doc).returncode != 0


def test_thresholds_and_durations_come_from_the_spec():
    f = fleet(
        gpu_utilization={"threshold_percent": 90, "minutes": 7},
        gpu_memory={"threshold_percent": 97.5, "minutes": 3},
        vllm_queue={"waiting_above": 40, "minutes": 4},
    )
    rules = {r["alert"]: r for r in monitoring.alert_rules(f)["groups"][0]["rules"]}
    assert rules["GpuUtilizationHigh"]["expr"].endswith("> 90") and rules["GpuUtilizationHigh"]["for"] == "7m"
    assert rules["GpuMemoryHigh"]["expr"].endswith("> 97.5") and rules["GpuMemoryHigh"]["for"] == "3m"
    assert rules["VllmQueueLong"]["expr"].endswith("> 40") and rules["VllmQueueLong"]["for"] == "4m"


def test_shipped_defaults_are_the_fleet_alarms():
    rules = {r["alert"]: r for r in monitoring.alert_rules(fleet())["groups"][0]["rules"]}
    assert (rules["GpuUtilizationHigh"]["expr"].split()[-1], rules["GpuUtilizationHigh"]["for"]) == ("95", "5m")
    assert (rules["GpuMemoryHigh"]["expr"].split()[-1], rules["GpuMemoryHigh"]["for"]) == ("98", "1m")
    assert (rules["VllmQueueLong"]["expr"].split()[-1], rules["VllmQueueLong"]["for"]) == ("100", "2m")
    assert all(r["labels"]["fleet"] == "llm-prod" for r in rules.values())


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("vllm", ["0.33.0", "0.10.0"])
def test_every_metric_name_is_exported_by_the_pinned_software(stack, vllm):
    assert monitoring.unknown_metrics(fleet(stack), vllm) == []


def test_an_unknown_metric_name_is_caught():
    f = fleet()
    names = set().union(*(monitoring.metric_names(e) for e in monitoring.expressions(f)))
    assert {"vllm:num_requests_waiting", "DCGM_FI_DEV_FB_USED", "node_cpu_seconds_total"} <= names
    assert monitoring.metric_names('rate(vllm:gpu_cache_usage_perc{a="b"}[5m]) > 1') == {"vllm:gpu_cache_usage_perc"}
    assert "vllm:gpu_cache_usage_perc" in monitoring.exported_names("0.10.0")
    assert "vllm:gpu_cache_usage_perc" not in monitoring.exported_names("0.33.0")  # removed after 0.10
    assert "vllm:num_requests_waiting_total" not in monitoring.exported_names("0.33.0")  # a gauge has no _total


def test_metric_lists_carry_their_sources():
    data = yaml.safe_load(monitoring.METRIC_NAMES.read_text())
    assert set(data["vllm"]) >= {"0.33.0", "0.10.0"}
    for version, facts in data["vllm"].items():
        assert facts["source"].startswith("PyPI wheel vllm-" + version)
        assert all(m["at"].startswith("vllm/v1/metrics/loggers.py:") for m in facts["metrics"].values())
    assert "default-counters.csv" in data["dcgm_exporter"]["source"]
    assert "node_exporter" in data["node_exporter"]["source"] and "v1.7.0" in data["node_exporter"]["source"]


def test_pinned_exporter_versions_match_the_lists():
    from gpufleet.images.recipes import load_recipe

    for recipe in ("cuda13-vllm", "cuda12-vllm-v100"):
        pins = load_recipe(recipe).pins
        assert pins["vllm"] in yaml.safe_load(monitoring.METRIC_NAMES.read_text())["vllm"]
        assert pins["node_exporter"] == "1.7.0", recipe  # metric_names.yaml lists node_exporter 1.7.0's metric names


def test_dashboard_is_grafana_json_with_vllm_gpu_and_node_panels():
    files = monitoring.files(fleet())
    board = json.loads(files["gpufleet-llm-prod-alicloud-cn-hangzhou.dashboard.json"])
    titles = " ".join(p["title"] for p in board["panels"])
    assert "vLLM" in titles and "GPU" in titles and "Node" in titles
    assert all(p["datasource"]["uid"] == "${datasource}" for p in board["panels"])
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    assert yaml.safe_load(files["gpufleet-llm-prod-alicloud-cn-hangzhou.rules.yml"]) == monitoring.alert_rules(fleet())


def test_stacks_of_one_fleet_name_in_other_regions_and_clouds_neither_share_files_nor_select_each_others_series():
    """Review M4: `region new` names every prod fleet llm-prod; the Alibaba Hangzhou and Tencent Guangzhou stacks wrote
    the same gpufleet-llm-prod.* (one replacing the other in one folder) and byte-identical rules, selecting only
    gpufleet_fleet="llm-prod", so one Prometheus mixed them. The files and every selector now carry cloud and region."""
    a, b = fleet("alicloud-cn-hangzhou-prod"), fleet("tencentcloud-ap-guangzhou-prod")
    assert a.prefix == b.prefix == "llm-prod"
    assert not set(monitoring.files(a)) & set(monitoring.files(b))
    assert monitoring.dashboard(a)["uid"] != monitoring.dashboard(b)["uid"]
    assert all(len(monitoring.dashboard(f)["uid"]) <= 40 for f in (a, b))  # Grafana's limit
    for f, cloud, region in ((a, "alicloud", "cn-hangzhou"), (b, "tencentcloud", "ap-guangzhou")):
        selects = f'gpufleet_fleet="llm-prod",gpufleet_cloud="{cloud}",gpufleet_region="{region}"'
        assert all(selects in e for e in monitoring.expressions(f)), cloud
        rules = next(text for name, text in monitoring.files(f).items() if name.endswith(".rules.yml"))
        assert rules.splitlines()[0].endswith(
            f"{{gpufleet_fleet: llm-prod, gpufleet_cloud: {cloud}, gpufleet_region: {region}}}"
        )  # the labels to scrape with, in the file (docs/monitoring.md's scrape config)
