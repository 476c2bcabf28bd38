"""The Tencent scaler function (components/tencentcloud/scaler/) run from its own zip (package.py) against a local
TencentCloud API stand-in that checks every signature (scaler_fakes.py) and node /metrics servers on 127.0.0.N."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml
from scaler_fakes import KEYS, FakeNodes, FakeTencentApi

from gpufleet.components.tencentcloud.scaler import package

ROOT = Path(__file__).resolve().parents[2]
REGION = "ap-guangzhou"
PATH = "/metrics/vllm"
SM = yaml.safe_load((ROOT / "src" / "gpufleet" / "images/data/scaling_metrics.yaml").read_text())


def exposition(waiting: float, kv: float, running: float = 1, engines: int = 1, old: bool = False) -> str:
    """vLLM's /metrics as the pinned versions write it (0.10.0: gpu_cache_usage_perc, no engine label)."""
    kv_name = SM["metrics"]["kv_cache"]["vllm"][-1 if old else 0]
    lines = []
    for e in range(engines):
        labels = '{model_name="qwen"}' if old else f'{{engine="{e}",model_name="qwen \\"7b\\""}}'
        lines += [
            f"{SM['metrics']['queue']['vllm'][0]}{labels} {waiting}",
            f"{SM['metrics']['running']['vllm'][0]}{labels} {running}",
            f"{kv_name}{labels} {kv}",
        ]
    return "# HELP x\n# TYPE x gauge\n" + "\n".join(lines) + "\n"


@pytest.fixture
def unpacked(tmp_path):
    """The function's zip, unpacked as SCF does, and its index module loaded from there."""
    with zipfile.ZipFile(io.BytesIO(package.zip_bytes())) as z:
        assert sorted(z.namelist()) == ["index.py", "signals.json"]
        z.extractall(tmp_path / "code")
    spec = importlib.util.spec_from_file_location("scaler_under_test", tmp_path / "code" / "index.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, tmp_path / "code"


@pytest.fixture
def cloud():
    api = FakeTencentApi(REGION)
    nodes = FakeNodes(PATH)
    yield api, nodes
    api.close()
    nodes.close()


def env_for(
    nodes: FakeNodes, groups: list[str], metric: str = "queue", out_above: str = "100", in_below: str = "1", **extra
) -> dict:
    return {
        **KEYS,
        "GPUFLEET_REGION": REGION,
        "GPUFLEET_SCALING_GROUP": ",".join(groups),
        "GPUFLEET_SCALE_OUT_POLICY": "asp-out",
        "GPUFLEET_SCALE_IN_POLICY": "asp-in",
        "GPUFLEET_METRIC": metric,
        "GPUFLEET_SCALE_OUT_ABOVE": out_above,
        "GPUFLEET_SCALE_IN_BELOW": in_below,
        "GPUFLEET_METRICS_PORT": str(nodes.port),
        "GPUFLEET_METRICS_PATH": PATH,
        **extra,
    }


def fleet(api: FakeTencentApi, nodes: FakeNodes, texts: dict[str, str | None], groups=("asg-base", "asg-spot")) -> list[str]:
    """Nodes spread over the groups (the on-demand base and the spot group), each at its 127.0.0.N address."""
    api.policies = {"asp-out": groups[-1], "asp-in": groups[-1]}
    nodes.start(texts)
    for i, ip in enumerate(texts):
        api.add(groups[i % len(groups)], 1, [ip])
    return list(groups)


def run(module, monkeypatch, api, env: dict) -> dict:
    monkeypatch.setattr(module, "ENDPOINT", api.url)
    monkeypatch.setattr(module.os, "environ", env)
    return module.main_handler({"Type": "Timer"}, None)


def test_scales_out_on_the_queue_averaged_over_nodes(unpacked, cloud, monkeypatch, capsys):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(150, 0.5), "127.0.0.3": exposition(90, 0.5, engines=2)})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "out" and "average 165 over 2 node(s)" in result["why"], result  # (150 + 2*90) / 2
    assert api.hosts == {"as.tencentcloudapi.com", "cvm.tencentcloudapi.com"}
    assert api.executed == [{"AutoScalingPolicyId": "asp-out", "HonorCooldown": True}]
    assert [a for a, _ in api.calls] == ["DescribeAutoScalingInstances"] * 2 + ["DescribeInstances", "ExecuteScalingPolicy"]
    out = capsys.readouterr().out
    assert all(v not in out for v in KEYS.values())


def test_the_internal_api_domain_is_signed_as_such(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(150, 0.5)})
    result = run(module, monkeypatch, api, env_for(nodes, groups, GPUFLEET_API_DOMAIN="internal.tencentcloudapi.com"))
    assert result["action"] == "out" and api.hosts == {"as.internal.tencentcloudapi.com", "cvm.internal.tencentcloudapi.com"}


def test_scales_in_when_every_node_is_low(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(0, 0.1), "127.0.0.3": exposition(0, 0.1)})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "in" and api.executed == [{"AutoScalingPolicyId": "asp-in", "HonorCooldown": True}]


def test_holds_between_the_thresholds(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(50, 0.1)})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "hold" and not api.executed


def test_an_unreachable_node_is_left_out_and_blocks_scale_in(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(0, 0.1), "127.0.0.3": None, "127.0.0.4": exposition(0, 0.1)})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "hold" and "no scale-in while a node does not answer" in result["why"]
    assert list(result["nodes"].values()).count(None) == 1 and not api.executed


def test_an_unreachable_node_does_not_stop_scale_out(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(300, 0.9), "127.0.0.3": None})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "out" and "1 not answering" in result["why"]  # 300 over the one node that answered


def test_nothing_happens_when_no_node_answers(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": None, "127.0.0.3": None})
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "hold" and "no node answered" in result["why"] and not api.executed


def test_only_in_service_nodes_are_read(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(0, 0.1)})
    api.add(groups[-1], 1, ["127.0.0.9"], state="CREATING")  # still booting: not listed, so no scale-in block
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert len(result["nodes"]) == 1 and result["action"] == "in"


@pytest.mark.parametrize("old", [False, True])
def test_kv_cache_in_percent_for_both_pinned_name_sets(unpacked, cloud, monkeypatch, old):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(0, 0.95, old=old), "127.0.0.3": exposition(0, 0.85, old=old)})
    result = run(module, monkeypatch, api, env_for(nodes, groups, metric="kv_cache", out_above="80", in_below="20"))
    assert result["action"] == "out" and sorted(result["nodes"].values()) == [85.0, 95.0], result


def test_a_refused_policy_is_a_hold_not_a_crash(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(500, 0.9)})
    api.refuse_execute = "ResourceInUse.ActivityInProgress"
    result = run(module, monkeypatch, api, env_for(nodes, groups))
    assert result["action"] == "hold" and "ActivityInProgress" in result["error"]


def test_wrong_keys_are_refused_by_the_stand_in(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(500, 0.9)})
    result = run(module, monkeypatch, api, {**env_for(nodes, groups), "TENCENTCLOUD_SECRETKEY": "not-the-key"})
    assert "AuthFailure.SignatureFailure" in result["error"] and not api.executed


def test_paging_over_more_than_one_page(unpacked, cloud, monkeypatch):
    module, _ = unpacked
    api, _ = cloud
    api.add("asg-big", 150, [])
    monkeypatch.setattr(module, "ENDPOINT", api.url)
    found = module.in_service(module.Api(KEYS, REGION, 2), ["asg-big"])
    assert len(found) == 150 and [p["Offset"] for a, p in api.calls if a == "DescribeAutoScalingInstances"] == [0, 100]
    ips = module.private_ips(module.Api(KEYS, REGION, 2), found)
    assert len(ips) == 150 and [len(p["InstanceIds"]) for a, p in api.calls if a == "DescribeInstances"] == [100, 50]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"GPUFLEET_METRIC": "cpu"}, "GPUFLEET_METRIC='cpu'"),
        ({"GPUFLEET_SCALE_IN_BELOW": "200"}, "must be below"),
        ({"GPUFLEET_SCALING_GROUP": ""}, "GPUFLEET_SCALING_GROUP not set"),
        ({"TENCENTCLOUD_SECRETID": None}, "give the function an execution role"),
    ],
)
def test_bad_configuration_is_a_clear_message(unpacked, cloud, monkeypatch, change, message):
    module, _ = unpacked
    api, nodes = cloud
    env = {k: v for k, v in {**env_for(nodes, ["asg-x"]), **change}.items() if v is not None}
    result = run(module, monkeypatch, api, env)
    assert message in result["error"] and not api.calls


def test_the_zip_runs_on_the_python_scf_offers(unpacked, cloud, tmp_path):
    """SCF's Python 3.9 runtime (docs/research/scaling-paths.md 2.3): the unpacked zip, under that interpreter."""
    found = [*sorted(Path.home().glob(".pyenv/versions/3.9*/bin/python3.9")), Path("/usr/bin/python3.9")]
    py = next((p for p in found if p.exists()), None)
    if not py:
        pytest.skip("no Python 3.9 interpreter here")
    _, code = unpacked
    api, nodes = cloud
    groups = fleet(api, nodes, {"127.0.0.2": exposition(150, 0.5)})
    script = f"import index, json; index.ENDPOINT = {api.url!r}; print(json.dumps(index.main_handler({{}}, None)))"
    env = {"PATH": os.environ["PATH"], **env_for(nodes, groups)}
    r = subprocess.run([str(py), "-c", script], cwd=code, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["action"] == "out" and api.executed


def test_before_the_first_reading_the_scaler_neither_scales_out_nor_in():
    """No data yet (a new fleet, nodes still loading): hold; a node not answering blocks scale-in, never forces it."""
    from gpufleet.components.tencentcloud.scaler import index

    assert index.decide({}, 4, 0.5)[0] == "hold"
    assert index.decide({"n1": None, "n2": None}, 4, 0.5)[0] == "hold"
    assert index.decide({"n1": 0.0, "n2": None}, 4, 0.5)[0] == "hold"
    assert index.decide({"n1": 0.0, "n2": 0.0}, 4, 0.5)[0] == "in"
