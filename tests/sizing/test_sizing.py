"""Memory fit, capacity plan, vLLM flag check, and the stack check that `gpufleet preview` runs."""

import copy
import json
from pathlib import Path

import pytest
from gpufleet.sizing import capacity, fit, flags, models
from gpufleet.stacks import loader
from gpufleet.stacks.catalog import gpu_kinds

from gpufleet.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
KINDS = gpu_kinds()
GIB = 2**30


@pytest.mark.parametrize("model", sorted(models.catalog()))
@pytest.mark.parametrize("gpu", sorted(KINDS))
def test_every_model_gpu_pair_answers(model, gpu):
    r = fit.fit(models.lookup(model), KINDS[gpu], fit.Serving(), KINDS)
    assert isinstance(r.fits, bool) and r.kv_bytes_per_token > 0 and r.weights_gib > 0
    assert r.fits or (r.problems and r.advice)


def test_hand_worked_qwen7b_bf16_on_a10():
    # KV per token = 2 x 28 layers x 4 KV heads x 128 head dim x 2 B = 57344 B
    # weights = 7.61e9 params x 2 B = 15.22e9 B = 14.17 GiB; budget = 24 GiB x 0.9 = 21.6 GiB
    # overhead = 8192 tokens x 3584 x 2 B x 52 + 0.1 GiB = 2.944 GiB; KV = 21.6 - 14.175 - 2.944 = 4.48 GiB = 83914 tokens
    r = fit.fit(models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["A10"], fit.Serving(dtype="bfloat16", max_model_len=8192))
    assert r.kv_bytes_per_token == 57344
    assert r.weights_gib == pytest.approx(7.61e9 * 2 / GIB)
    assert r.kv_cache_gib == pytest.approx(21.6 - 7.61e9 * 2 / GIB - (8192 * 3584 * 2 * 52 / GIB + 0.1))
    assert r.kv_tokens == 83914 and r.max_concurrent_seqs == 83914 // 8192 == 10 and r.fits


def test_hand_worked_llama70b_fp16_on_two_a100_80g():
    # KV per token = 2 x 80 x 8 x 128 x 2 B = 327680 B; weights = 70.6e9 x 2 B = 131.5 GiB; budget = 2 x 80 x 0.9 = 144 GiB
    # overhead = 2 x (8192 x 8192 x 2 x 52 + 0.1 GiB) = 13.2 GiB: 131.5 + 13.2 > 144 -> does not fit; TP=4 does
    r = fit.fit(
        models.lookup("meta-llama/Llama-3.1-70B-Instruct"), KINDS["A100-80G"], fit.Serving(gpus=2, dtype="float16"), KINDS
    )
    assert r.kv_bytes_per_token == 327680 and r.weights_gib == pytest.approx(70.6e9 * 2 / GIB)
    assert not r.fits and any("tensor-parallel over 4" in a for a in r.advice)


def test_published_vllm_log_issue_13882():
    # vllm-project/vllm#13882: Qwen2.5-7B AWQ on an 8 GiB RTX 4060 at gpu_memory_utilization 0.70, max_model_len 4096:
    # "model weights take 5.20GiB; non_torch_memory takes 0.03GiB; PyTorch activation peak memory takes 1.42GiB;
    #  the rest of the memory reserved for KV Cache is -1.05GiB" and "# cuda blocks: 0" (it cannot start).
    rtx4060 = type(KINDS["T4"])(name="RTX4060", model="RTX 4060", architecture="Ada", compute_capability="8.9", memory_gib=8)
    r = fit.fit(
        models.lookup("Qwen/Qwen2.5-7B-Instruct"),
        rtx4060,
        fit.Serving(
            dtype="float16", quantization="awq", max_model_len=4096, max_num_batched_tokens=4096, gpu_memory_utilization=0.70
        ),
    )
    assert r.weights_gib == pytest.approx(5.20, abs=0.1)
    assert r.overhead_gib == pytest.approx(1.42 + 0.03, abs=0.15)
    assert r.kv_cache_gib == pytest.approx(-1.05, abs=0.25) and not r.fits


def test_refusals():
    q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    assert any("bfloat16 needs" in p for p in fit.fit(q7, KINDS["T4"], fit.Serving(dtype="bfloat16")).problems)
    assert any(
        "fp8 needs" in p for p in fit.fit(q7, KINDS["V100-32G"], fit.Serving(dtype="float16", quantization="fp8")).problems
    )
    assert any(
        "awq needs" in p for p in fit.fit(q7, KINDS["V100-32G"], fit.Serving(dtype="float16", quantization="awq")).problems
    )
    assert fit.fit(q7, KINDS["T4"], fit.Serving(dtype="auto")).dtype == "float16"  # vLLM casts bf16 checkpoints below 8.0
    long = fit.fit(q7, KINDS["A100-80G"], fit.Serving(max_model_len=65536))
    assert any("max_position_embeddings" in p for p in long.problems)


def test_short_kv_cache_suggests_a_max_model_len():
    r = fit.fit(
        models.lookup("meta-llama/Llama-3.1-8B-Instruct"),
        KINDS["A10"],
        fit.Serving(dtype="bfloat16", max_model_len=131072),
        KINDS,
    )
    assert not r.fits and any("shorten max_model_len" in a for a in r.advice)


def test_local_config_json(tmp_path):
    cfg = {
        "num_layers": 40,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "multi_query_group_num": 2,
        "kv_channels": 128,
        "padded_vocab_size": 151552,
        "ffn_hidden_size": 13696,
        "seq_length": 131072,
        "torch_dtype": "bfloat16",
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = models.resolve(str(tmp_path / "config.json"))
    assert (m.layers, m.kv_heads, m.head_dim, m.max_positions) == (40, 2, 128, 131072) and m.parameters_estimated
    assert m.parameters_b == pytest.approx(9.4, rel=0.05)  # the card says 9.4B
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UserError) as exc:
        models.resolve(str(tmp_path / "bad.json"))
    assert exc.value.problems[0].path == "num_hidden_layers"


def test_capacity_and_loadtest_file(tmp_path):
    p = capacity.plan(20, 3, redundancy=1)
    assert (p.nodes, p.min_replicas, p.max_replicas) == (8, 2, 8)  # ceil(20/3)=7, +1
    f = tmp_path / "lt.json"
    f.write_text(
        json.dumps(
            {
                "slo_p95_ms": 2000,
                "levels": [
                    {"concurrency": 1, "requests_per_s": 1.0, "error_rate": 0},
                    {"concurrency": 10, "requests_per_s": 4.0, "error_rate": 0},
                ],
                "knee": {"concurrency": 10, "requests_per_s": 4.0},
            }
        )
    )
    assert capacity.per_node_qps(f)[0] == 4.0
    f.write_text(
        json.dumps(
            {
                "levels": [
                    {"concurrency": 1, "requests_per_s": 1.5, "error_rate": 0},
                    {"concurrency": 50, "requests_per_s": 9.0, "error_rate": 0.2},
                ],
                "knee": None,
            }
        )
    )
    assert capacity.per_node_qps(f)[0] == 1.5
    f.write_text(json.dumps({"levels": [{"concurrency": "x"}]}))
    with pytest.raises(UserError):
        capacity.per_node_qps(f)
    fleet = loader.load_fleet("alicloud-cn-hangzhou-prod", ROOT)
    assert [f for f, _ in capacity.replicas_problems(fleet.spec.replicas, capacity.plan(100, 3))] == ["fleet.replicas.max"]


def test_flags_against_the_pinned_snapshot():
    assert flags.argv_problems(["--max-model-len", "4096", "--max_num_seqs", "8", "--dtype", "float16"], "0.33.0") == []
    (unknown,) = flags.argv_problems(["--max-model-length", "4096"], "0.33.0")
    assert "did you mean" in unknown and "--max-model-len" in unknown
    (choice,) = flags.argv_problems(["--dtype", "fp17"], "0.33.0")
    assert "accepts" in choice
    assert "no flag snapshot" in flags.argv_problems(["--dtype", "auto"], "0.0.1")[0]


def _prod(**changes):
    raw = copy.deepcopy(loader.read_stack_config("alicloud-cn-hangzhou-prod", ROOT)[1][loader.CONFIG_KEY])
    for path, value in changes.items():
        node = raw
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return raw


def test_72b_fp16_on_one_t4_fails_validation_with_why_and_what_to_change():
    raw = _prod(**{"gpu.kind": "T4", "model.name": "Qwen/Qwen2.5-72B-Instruct", "serving.dtype": "float16"})
    with pytest.raises(UserError) as exc:
        loader.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    (problem,) = [p for p in exc.value.problems if p.path == "fleet.serving"]
    assert "exceed the 14.4 GiB budget" in problem.message and "To fix:" in problem.message and "gpu.count" in problem.message


def test_advice_names_only_node_sizes_the_cloud_sells():
    # 72B fp16 on a T4: the least memory that fits is 2x V100-32G with 4-bit weights; Tencent sells that node,
    # Alibaba does not (its V100-32G nodes have 1, 4 or 8 GPUs), so there the answer moves to another size
    from gpufleet.sizing.checks import sold_sizes

    arch, s = models.lookup("Qwen/Qwen2.5-72B-Instruct"), fit.Serving(dtype="float16")
    anywhere = fit.fit(arch, KINDS["T4"], s, KINDS).advice[-1]
    tencent = fit.fit(arch, KINDS["T4"], s, KINDS, sold_sizes("tencentcloud")).advice[-1]
    alibaba = fit.fit(arch, KINDS["T4"], s, KINDS, sold_sizes("alicloud")).advice[-1]
    assert "2x V100-32G" in anywhere and "2x V100-32G" in tencent
    assert ("V100-32G", 2) not in sold_sizes("alicloud") and "2x V100-32G" not in alibaba and "smallest that does" in alibaba
    name, n = alibaba.split("the smallest that does: ")[1].split(" (")[0].split("x ")[::-1]
    assert (name, int(n)) in sold_sizes("alicloud")


def test_unknown_extra_flag_fails_validation():
    raw = _prod(**{"serving.extra_args": {"enable_prefix_cachin": True}})
    with pytest.raises(UserError) as exc:
        loader.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    assert any("--enable-prefix-cachin" in p.message and "vLLM 0.33.0" in p.message for p in exc.value.problems)


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_shipped_stacks_fit(stack):
    from gpufleet.sizing import checks as sizing_checks

    assert sizing_checks.spec_problems(loader.load_fleet(stack, ROOT, sizing=False)) == []


def test_plan_fit_reports_unknown_choices_without_a_traceback():
    import subprocess
    import sys

    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gpufleet.cli import main; main()",
            "plan",
            "fit",
            "--model",
            "Qwen/Qwen2.5-7B-Instruct",
            "--gpu",
            "A11",
            "--dtype",
            "bfloat",
            "--kv-cache-dtype",
            "int3",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    for flag, hint in (("--gpu", "'A10'"), ("--dtype", "'bfloat16'"), ("--kv-cache-dtype", "auto, fp8")):
        assert f"error {flag}: unknown" in r.stderr and hint in r.stderr
