"""sizing/data/vllm_metrics.yaml names the /metrics series the node agent reads, for every vLLM an image recipe pins."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
METRICS = yaml.safe_load((ROOT / "src" / "gpufleet" / "sizing" / "data" / "vllm_metrics.yaml").read_text(encoding="utf-8"))
RECIPES = sorted((ROOT / "src" / "gpufleet" / "images" / "recipes").glob("*.yaml"))


def pinned_vllm_versions() -> set[str]:
    return {str(yaml.safe_load(p.read_text(encoding="utf-8"))["pins"]["vllm"]) for p in RECIPES}


def test_every_pinned_vllm_has_its_metric_names():
    assert RECIPES, "no image recipes found"
    assert pinned_vllm_versions() <= set(METRICS["versions"])


def test_each_version_names_three_prometheus_series_with_a_source_line():
    for version, entry in METRICS["versions"].items():
        for key in ("waiting", "running", "kv_cache_usage"):
            assert entry[key].startswith("vllm:"), (version, key)
        assert entry["kv_cache_usage_scale"] == "fraction", version
        assert entry["sources"] and all(s["file"].startswith("vllm/") and s["lines"] for s in entry["sources"]), version


def test_kv_cache_name_differs_between_the_pinned_lines():
    # 0.33 renamed the KV cache gauge; 0.10 on V100 (V0 engine) only has the old name.
    assert METRICS["versions"]["0.33.0"]["kv_cache_usage"] == "vllm:kv_cache_usage_perc"
    assert "vllm:gpu_cache_usage_perc" in METRICS["versions"]["0.33.0"]["absent"]
    assert METRICS["versions"]["0.10.0"]["kv_cache_usage"] == "vllm:gpu_cache_usage_perc"
