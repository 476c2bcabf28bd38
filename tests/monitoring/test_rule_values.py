"""The alert rules evaluated, not only parsed: `promtool test rules` runs the rule file gpufleet writes for the
Alibaba prod stack (monitoring.files) on series written by hand, and says which alerts fire: only on the series scraped
with that stack's labels (its fleet, cloud and region), not another environment's, region's or cloud's llm-prod.
Thresholds are prod's alarms.*: GPU memory above 98 % for 1 min, utilisation above 95 % for 5 min, more than 100
requests waiting for 2 min.

dcgm-exporter's DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE are the framebuffer's used and free MiB (DCGM field
reference; default-counters.csv): used + free is the framebuffer, so the percentage used is 100 x used / (used + free).
By hand, on a 22000 MiB framebuffer: 18000 used is 81.8 % (no alert), 21800 used is 99.1 % (alert)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from tools import require

from gpufleet import validation
from gpufleet.components import monitoring

ROOT = Path(__file__).resolve().parents[2]
STACK = "alicloud-cn-hangzhou-prod"


# the labels the scrape config puts on the Alibaba Hangzhou prod fleet's series (docs/monitoring.md)
SCRAPED = {"gpufleet_fleet": "llm-prod", "gpufleet_cloud": "alicloud", "gpufleet_region": "cn-hangzhou"}


def _series(name: str, values: str, **labels: str) -> dict:
    inner = ",".join(f'{k}="{v}"' for k, v in {**SCRAPED, "instance": "node-a:9180", **labels}.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _alert(summary: str, source: str, **labels: str) -> dict:
    return {
        "exp_labels": {
            "severity": "warning",
            "fleet": "llm-prod",
            **SCRAPED,
            "instance": "node-a:9180",
            **labels,
        },
        "exp_annotations": {"summary": summary, "source": source},
    }


def test_alert_rules_fire_on_the_values_worked_by_hand(tmp_path):
    fleet = validation.load_fleet(STACK, ROOT, sizing=False)
    files = monitoring.files(fleet)
    (rules_name,) = [n for n in files if n.endswith(".rules.yml")]
    (tmp_path / rules_name).write_text(files[rules_name])
    memory = "fleet spec alarms.gpu_memory"
    tests = {
        "rule_files": [rules_name],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    _series("DCGM_FI_DEV_FB_USED", "18000x10", gpu="0"),  # 81.8 %
                    _series("DCGM_FI_DEV_FB_FREE", "4000x10", gpu="0"),
                    _series("DCGM_FI_DEV_FB_USED", "21800x10", gpu="1"),  # 99.1 %
                    _series("DCGM_FI_DEV_FB_FREE", "200x10", gpu="1"),
                    _series("DCGM_FI_DEV_FB_USED", "21800x10", gpufleet_fleet="llm-dev", gpu="0"),  # another fleet's GPU
                    _series("DCGM_FI_DEV_FB_FREE", "200x10", gpufleet_fleet="llm-dev", gpu="0"),
                    # llm-prod of another region and of another cloud (region new names every prod fleet llm-prod)
                    _series("DCGM_FI_DEV_FB_USED", "21800x10", gpufleet_region="cn-beijing", gpu="0"),
                    _series("DCGM_FI_DEV_FB_FREE", "200x10", gpufleet_region="cn-beijing", gpu="0"),
                    _series(
                        "DCGM_FI_DEV_GPU_UTIL", "99x10", gpufleet_cloud="tencentcloud", gpufleet_region="ap-guangzhou", gpu="0"
                    ),
                    _series("DCGM_FI_DEV_GPU_UTIL", "96x10", gpu="0"),  # above 95 from minute 0
                    _series("vllm:num_requests_waiting", "100x10", instance="node-b:9180"),  # not more than 100
                    _series("vllm:num_requests_waiting", "101x10", instance="node-c:9180"),
                ],
                "alert_rule_test": [
                    {"eval_time": "0m", "alertname": "GpuMemoryHigh", "exp_alerts": []},  # pending for its 1 min
                    {
                        "eval_time": "5m",
                        "alertname": "GpuMemoryHigh",
                        "exp_alerts": [_alert("GPU 1 on node-a:9180 above 98% memory for 1 min", memory, gpu="1")],
                    },
                    {"eval_time": "4m", "alertname": "GpuUtilizationHigh", "exp_alerts": []},  # 4 of its 5 min
                    {
                        "eval_time": "5m",
                        "alertname": "GpuUtilizationHigh",
                        "exp_alerts": [
                            _alert(
                                "GPU 0 on node-a:9180 above 95% utilisation for 5 min",
                                "fleet spec alarms.gpu_utilization",
                                gpu="0",
                            )
                        ],
                    },
                    {
                        "eval_time": "5m",
                        "alertname": "VllmQueueLong",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "fleet": "llm-prod", **SCRAPED, "instance": "node-c:9180"},
                                "exp_annotations": {
                                    "summary": "vLLM on node-c:9180 has more than 100 requests waiting for 2 min",
                                    "source": "fleet spec alarms.vllm_queue",
                                },
                            }
                        ],
                    },
                ],
            }
        ],
    }
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False))
    r = subprocess.run(
        [require("promtool", "prometheus"), "test", "rules", "tests.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout
