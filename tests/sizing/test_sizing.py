"""Memory fit, capacity plan, vLLM flag check, and the stack check that `gpufleet preview` runs."""

import copy
import json
import re
from pathlib import Path

import pytest
from msgspec.structs import replace

from gpufleet import validation
from gpufleet.errors import UserError
from gpufleet.sizing import capacity, fit, flags, models, parallel, profiler
from gpufleet.stacks import loader
from gpufleet.stacks.catalog import gpu_kinds

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
    # vLLM 0.33.0 (the A10 recipe's pin), serve defaults: gpu_memory_utilization 0.92, max_num_batched_tokens 2048,
    # max_num_seqs 256. Per GPU: requested = 22.18 x 0.92 = 20.4056 GiB; weights = 7.61e9 x 2 B = 14.175 GiB;
    # non-torch 0.25 (V1 on one GPU); activation peak = max(2048 x 3584 x 2 x 13.5 = 0.185, V1 sampler 256 x 152064 x 15.2 = 0.551)
    # = 0.551; CUDA graphs 0.12 + 0.0008 x 512 = 0.5296; KV = 4.88 GiB; 57344 B/token -> whole blocks of 16 tokens.
    # Weights: the structure's 7,615,616,512 parameters (28 layers of q/k/v/o with the qkv bias, gated MLP 18944,
    # two norms; untied 152064 x 3584 embedding and LM head; final norm), the card's 7.61B within 0.1 %; plus the rope
    # cos/sin cache vLLM keeps with them: 32768 positions x 128 rotary dims x 2 B = 8 MiB
    q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    assert q7.parameters == 7_615_616_512
    r = fit.fit(q7, KINDS["A10"], fit.Serving(dtype="bfloat16", max_model_len=8192))
    assert r.kv_bytes_per_token == 57344 and r.vllm_version == "0.33.0" and r.engine == "V1"
    weights = 7_615_616_512 * 2 + 32768 * 128 * 2
    assert r.weights_gib == pytest.approx(weights / GIB)
    kv = 22.18 * 0.92 - weights / GIB - 0.25 - 256 * 152064 * 15.2 / GIB - (0.12 + 0.0008 * 512)
    assert r.kv_cache_gib == pytest.approx(kv)
    assert r.kv_tokens == int(kv * GIB // (16 * 57344)) * 16 == 91408 and r.max_concurrent_seqs == 11 and r.fits
    names = {t["name"] for t in r.to_json()["terms"]}
    assert names >= {"usable_memory", "weights", "non_torch", "activation_forward", "sampler_warmup", "cuda_graphs", "kv_cache"}


def test_hand_worked_llama70b_fp16_on_two_a100_80g():
    # Per GPU at TP 2: weights 70.6e9 x 2 B / 2 = 65.75 GiB; requested 79.25 x 0.92 = 72.91; non-torch at TP > 1 on a
    # GPU below compute capability 9.0 0.29 GiB (profiler.NON_TORCH_MULTI_GPU_GIB); KV about 5.9 GiB;
    # KV per token per GPU = 2 x 80 layers x 4 KV heads x 128 x 2 B = 163840 B -> about 38.7k tokens < 65536: refused;
    # an fp8 KV cache doubles that to about 77k (enough); at TP 4 the weights halve and it fits
    r = fit.fit(
        models.lookup("meta-llama/Llama-3.1-70B-Instruct"),
        KINDS["A100-80G"],
        fit.Serving(gpus=2, dtype="float16", max_model_len=65536),
        KINDS,
    )
    assert r.kv_bytes_per_token == 163840 and r.weights_gib == pytest.approx(70.6e9 * 2 / 2 / GIB, rel=2e-3)
    assert not r.fits and 36000 < r.kv_tokens < 41000
    assert any("tensor-parallel over 4" in a for a in r.advice)
    assert any("fp8 KV cache" in a for a in r.advice)  # fp8 doubles 38.7k to about 77k tokens: enough for 65536


def test_enforce_eager_and_old_engines_keep_cuda_graphs_out_of_the_budget():
    q7, a10 = models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["A10"]
    base = fit.measure(q7, a10, fit.Serving(max_model_len=8192))
    eager = fit.measure(q7, a10, fit.Serving(max_model_len=8192, enforce_eager=True))
    old = fit.measure(q7, a10, fit.Serving(max_model_len=8192, vllm_version="0.20.0"))
    graphs = {t.name: t.gib for t in base.terms}["cuda_graphs"]
    assert graphs > 0.1
    assert {t.name: t.gib for t in eager.terms}["cuda_graphs"] == 0 == {t.name: t.gib for t in old.terms}["cuda_graphs"]
    assert eager.kv_cache_gib == pytest.approx(base.kv_cache_gib + graphs)


def test_v100_follows_its_recipe_pin_and_the_v0_profiler():
    r = fit.measure(models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["V100-32G"], fit.Serving(max_model_len=8192))
    assert (r.vllm_version, r.engine, r.dtype) == ("0.10.0", "V0", "float16")
    # V0 defaults of 0.10.0: gpu_memory_utilization 0.9, max_num_batched_tokens max(max_model_len, 2048)
    assert r.serving["gpu_memory_utilization"] == 0.9 and r.serving["max_num_batched_tokens"] == 8192


def test_kv_cache_dtypes_follow_the_pinned_engine():
    q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    for dtype in ("fp8", "fp8_e4m3", "fp8_e5m2"):
        r = fit.measure(q7, KINDS["A10"], fit.Serving(kv_cache_dtype=dtype, max_model_len=8192))
        assert r.kv_bytes_per_token == 57344 // 2 and r.fits
    (p,) = fit.measure(q7, KINDS["A10"], fit.Serving(kv_cache_dtype="nvfp4", max_model_len=8192)).problems
    assert "not one vLLM 0.33.0" in p
    problems = fit.measure(q7, KINDS["T4"], fit.Serving(kv_cache_dtype="bfloat16", max_model_len=8192)).problems
    assert any("kv_cache_dtype bfloat16 needs compute capability >= 8.0" in p and "T4 has 7.5" in p for p in problems)
    # the refusal names the flag that fixes it, not only a bigger GPU (the advice)
    assert any(
        "T4 has 7.5; use --kv-cache-dtype auto (the dtype the model is served in) or one of float16" in p for p in problems
    )
    assert fit.measure(q7, KINDS["V100-32G"], fit.Serving(kv_cache_dtype="float16")).problems  # not a 0.10.0 V0 dtype


def test_a_gpu_outside_the_catalog_uses_generic_terms_flagged_as_estimates():
    gpu = fit.custom_gpu(23.58, "8.6")
    r = fit.measure(models.lookup("meta-llama/Llama-3.1-8B-Instruct"), gpu, fit.Serving(max_model_len=8192))
    terms = {t.name: t for t in r.terms}
    assert terms["usable_memory"].gib == 23.58 and not terms["usable_memory"].estimate
    assert terms["non_torch"].estimate and terms["cuda_graphs"].estimate and r.vllm_version == profiler.newest_pinned()


def test_refusals():
    q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    assert any("Bfloat16 is only supported" in p for p in fit.fit(q7, KINDS["T4"], fit.Serving(dtype="bfloat16")).problems)
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
        "architectures": ["ChatGLMModel"],
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = models.resolve(str(tmp_path / "config.json"))
    assert (m.layers, m.kv_heads, m.head_dim, m.max_positions) == (40, 2, 128, 131072) and m.parameters_estimated
    assert m.parameters_b == pytest.approx(9.4, rel=0.05)  # the card says 9.4B
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(UserError) as exc:
        models.resolve(str(tmp_path / "bad.json"))
    assert exc.value.problems[0].path == "num_hidden_layers"


@pytest.mark.parametrize(
    ("architectures", "expected"),
    [("Qwen2ForCausalLM", ("Qwen2ForCausalLM",)), (["Qwen2ForCausalLM"], ("Qwen2ForCausalLM",)), (None, None), (5, None)],
)
def test_architectures_are_read_as_vllm_reads_them(tmp_path, architectures, expected):
    """One name is one architecture (vLLM's registry wraps a string in a list), not its letters; a config.json without
    them is refused as vLLM refuses it (No model architectures are specified), naming the field."""
    cfg = json.loads((Path(models.__file__).parent / "data/configs/Qwen--Qwen2.5-7B-Instruct.json").read_text())
    cfg.pop("architectures", None)
    if architectures is not None:
        cfg["architectures"] = architectures
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    if expected is None:
        with pytest.raises(UserError) as exc:
            models.resolve(str(tmp_path / "config.json"))
        assert exc.value.problems[0].path == "architectures"
    else:
        assert models.resolve(str(tmp_path / "config.json")).architectures == expected


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
    fleet = validation.load_fleet("alicloud-cn-hangzhou-prod", ROOT)
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
        validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    (problem,) = [p for p in exc.value.problems if p.path == "fleet.serving"]
    assert (
        "13.12 GiB budget per GPU (14.58 GiB x 0.9)" in problem.message
        and "To fix:" in problem.message
        and "gpu.count" in problem.message
    )


def test_a_dtype_the_kernels_refuse_gets_the_dtype_or_format_that_fits_not_another_gpu():
    # AWQ with bfloat16 on an A100: vLLM refuses the dtype, and the fix is dtype float16 (or awq_marlin), each checked;
    # the advice was "no single change fits; the smallest that does: 1x T4", which did not say float16 (and a T4
    # with the stack's bfloat16 is refused too)
    arch, a100 = models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["A100-40G"]
    s = fit.Serving(dtype="bfloat16", quantization="awq", max_model_len=4096, max_num_seqs=16)
    r = fit.fit(arch, a100, s, KINDS)
    assert not r.fits and r.advice == [
        "use dtype float16 (what the awq kernels take) and it fits",
        "quantization awq_marlin takes bfloat16 and fits",
    ]
    assert fit.fit(arch, a100, replace(s, dtype="float16"), KINDS).fits
    assert fit.fit(arch, a100, replace(s, quantization="awq_marlin"), KINDS).fits


def test_bfloat16_on_an_older_gpu_is_advised_alone_only_when_it_is_enough():
    # 72B in bfloat16 on a T4: float16 is needed but far from enough; the advice was only "use dtype float16 (or
    # auto)". Now the combination that fits, with the dtype it needs.
    arch, t4 = models.lookup("Qwen/Qwen2.5-72B-Instruct"), KINDS["T4"]
    r = fit.fit(arch, t4, fit.Serving(dtype="bfloat16", max_model_len=4096), KINDS)
    assert not r.fits and len(r.advice) == 1 and "no single change fits" in r.advice[0] and "dtype float16" in r.advice[0]
    small = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    s = fit.Serving(dtype="bfloat16", quantization="awq", max_model_len=4096, max_num_seqs=16)
    assert fit.fit(small, t4, s, KINDS).advice == ["use dtype float16 (or auto) and it fits"]
    assert fit.fit(small, t4, replace(s, dtype="float16"), KINDS).fits


def test_advice_names_only_node_sizes_the_cloud_sells():
    # 72B fp16 at 32k context on a T4: the least memory that fits is 2x A100-40G with 4-bit weights; Tencent sells
    # that node, Alibaba does not (its A100-40G nodes have 1, 4 or 8 GPUs), so there the answer moves to another size
    from gpufleet.sizing.checks import sold_sizes

    arch, s = models.lookup("Qwen/Qwen2.5-72B-Instruct"), fit.Serving(dtype="float16", max_model_len=32768)
    anywhere = fit.fit(arch, KINDS["T4"], s, KINDS).advice[-1]
    tencent = fit.fit(arch, KINDS["T4"], s, KINDS, sold_sizes("tencentcloud")).advice[-1]
    alibaba = fit.fit(arch, KINDS["T4"], s, KINDS, sold_sizes("alicloud")).advice[-1]
    assert "2x A100-40G" in anywhere and "2x A100-40G" in tencent
    assert ("A100-40G", 2) not in sold_sizes("alicloud") and "2x A100-40G" not in alibaba and "smallest that does" in alibaba
    name, n = alibaba.split("the smallest that does: ")[1].split(" (")[0].split("x ")[::-1]
    assert (name, int(n)) in sold_sizes("alicloud")


def test_unknown_extra_flag_fails_validation():
    raw = _prod(**{"serving.extra_args": {"enable_prefix_cachin": True}})
    with pytest.raises(UserError) as exc:
        validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    assert any("--enable-prefix-cachin" in p.message and "vLLM 0.33.0" in p.message for p in exc.value.problems)


@pytest.mark.parametrize("stack", loader.stack_names(ROOT))
def test_shipped_stacks_fit(stack):
    from gpufleet.sizing import checks as sizing_checks

    assert sizing_checks.spec_problems(validation.load_fleet(stack, ROOT, sizing=False)) == []


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
    for flag, hint in (("--gpu", "'A10'"), ("--dtype", "'bfloat16'"), ("--kv-cache-dtype", "fp8_e5m2")):
        assert f"error {flag}: unknown" in r.stderr and hint in r.stderr


def _plan(*args: str):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", "fit", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_plan_fit_json_lists_each_term_for_the_issue_17_example():
    r = _plan(
        "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "A10", "--dtype", "bfloat16",
        "--max-model-len", "20000", "--max-num-batched-tokens", "20000", "--json",
    )  # fmt: skip
    out = json.loads(r.stdout)
    terms = {t["name"]: t for t in out["terms"]}
    assert set(terms) == {
        "usable_memory", "requested", "weights", "lora", "non_torch", "other_processes", "activation_forward",
        "sampler_warmup", "activation_peak", "cuda_graphs", "kv_cache",
    }  # fmt: skip
    assert terms["other_processes"]["gib"] == 0 and out["serving"]["reserved_gib"] == 0
    assert terms["usable_memory"]["gib"] == 22.18 and "MiniCPM-V/issues/640" in terms["usable_memory"]["source"]
    assert out["vllm_version"] == "0.33.0" and out["serving"]["gpu_memory_utilization"] == 0.92
    assert out["fits"] and r.returncode == 0 and out["kv_tokens"] >= 20000


def test_plan_fit_custom_gpu_excludes_gpu_stack_and_cloud_and_checks_its_values():
    for extra in (["--gpu", "A10"], ["--stack", "alicloud-cn-hangzhou-prod"], ["--cloud", "alicloud"]):
        r = _plan("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-gib", "23.58", "--compute-capability", "8.6", *extra)
        assert r.returncode == 2 and "not with --gpu, --stack or --cloud" in r.stderr and "Traceback" not in r.stderr
    r = _plan("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-gib", "23.58", "--compute-capability", "86")
    assert r.returncode == 2 and "--compute-capability" in r.stderr
    r = _plan("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-gib", "23.58", "--compute-capability", "8.6", "--json")
    terms = {t["name"]: t for t in json.loads(r.stdout)["terms"]}
    assert terms["usable_memory"]["gib"] == 23.58 and terms["non_torch"]["estimate"] and terms["cuda_graphs"]["estimate"]


@pytest.mark.parametrize(
    "given, missing", [("--gpu-memory-gib", "--compute-capability"), ("--compute-capability", "--gpu-memory-gib")]
)
def test_plan_fit_custom_gpu_says_the_other_option_is_required(given, missing):
    value = {"--gpu-memory-gib": "24", "--compute-capability": "8.6"}[given]
    r = _plan("--model", "Qwen/Qwen2.5-7B-Instruct", given, value)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{missing}: required with {given}" in r.stderr and "None" not in r.stderr, r.stderr


@pytest.mark.parametrize("flag", ["--cpu-offload-gb", "--reserved-gib", "--gpu-memory-utilization"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_plan_fit_refuses_non_finite_numbers(flag, value):
    r = _plan("--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", flag, value)
    assert r.returncode == 2 and "Traceback" not in r.stderr and f"'{flag}'" in r.stderr, r.stderr
    assert "not a finite number" in r.stderr or "not in the range" in r.stderr, r.stderr


def test_plan_fit_reserved_gib_takes_other_processes_memory_out_of_the_kv_cache():
    # vllm#11230 (calibration.yaml): 72B GPTQ on a 47.74 GiB card where 3.74 GiB was held by something else.
    base = (
        "--model", "Qwen/Qwen2.5-72B-Instruct", "--quantization", "gptq", "--dtype", "float16",
        "--gpu-memory-gib", "47.74", "--compute-capability", "8.6", "--vllm-version", "0.6.4.post1",
        "--max-model-len", "8192", "--gpu-memory-utilization", "0.95", "--enforce-eager", "--json",
    )  # fmt: skip
    alone, shared = _plan(*base), _plan(*base, "--reserved-gib", "3.74")
    a, b = json.loads(alone.stdout), json.loads(shared.stdout)
    assert alone.returncode == 0 and a["fits"] and shared.returncode == 1 and not b["fits"]
    term = {t["name"]: t for t in b["terms"]}["other_processes"]
    assert term["gib"] == 3.74 and not term["estimate"] and "--reserved-gib" in term["source"]
    assert abs((a["kv_cache_gib"] - b["kv_cache_gib"]) - 3.74) < 1e-9 and b["serving"]["reserved_gib"] == 3.74
    bad = _plan(*base, "--reserved-gib", "-1")
    assert bad.returncode == 2 and "--reserved-gib" in bad.stderr and "Traceback" not in bad.stderr


def test_reserved_gib_on_a_baseline_profiler_leaves_the_kv_cache_and_checks_the_budget_fits_beside_it():
    # 0.33.0 measures from a start-up baseline: other processes' memory is not in the KV budget, but V1 refuses to
    # start when free memory is below usable x gpu_memory_utilization (vllm/v1/worker/utils.py:762-770).
    arch, a10 = models.lookup("meta-llama/Llama-3.1-8B-Instruct"), KINDS["A10"]
    s = fit.Serving(dtype="bfloat16", max_model_len=8192)
    alone = fit.measure(arch, a10, s)
    small = fit.measure(arch, a10, fit.Serving(dtype="bfloat16", max_model_len=8192, reserved_gib=1.0))
    big = fit.measure(arch, a10, fit.Serving(dtype="bfloat16", max_model_len=8192, reserved_gib=3.0))
    assert alone.vllm_version == "0.33.0" and alone.fits and small.fits
    assert small.kv_cache_gib == alone.kv_cache_gib == big.kv_cache_gib  # 22.18 - 1.0 >= 22.18 x 0.92 = 20.41
    assert not big.fits and any("less than desired GPU memory utilization" in p for p in big.problems)
    advice = fit.fit(arch, a10, fit.Serving(dtype="bfloat16", max_model_len=8192, reserved_gib=3.0), KINDS).advice
    # (22.18 - 3) / 22.18 = 0.86 fills what is free; the sampler warm-up after the KV cache needs the CUDA context
    # (0.51 GiB) outside the budget too: 22.18 x (1 - 0.84) - 3 - 0.51 >= 0
    assert advice[0].startswith("lower gpu_memory_utilization to 0.84")


def test_memory_relevant_extra_args_of_a_stack_are_read():
    from gpufleet.sizing import checks

    raw = _prod(**{"serving.extra_args": {"enforce_eager": True}, "serving.kv_cache_dtype": "fp8_e5m2"})
    fleet = validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    s = checks.serving_of(fleet.spec)
    assert s.enforce_eager and s.kv_cache_dtype == "fp8_e5m2" and s.vllm_version == "0.33.0"
    r = fit.measure(models.lookup(fleet.spec.model.catalog or fleet.spec.model.name), fleet.gpu, s)
    assert {t.name: t.gib for t in r.terms}["cuda_graphs"] == 0 and r.serving["kv_cache_dtype"] == "fp8_e5m2"


def test_parallel_lora_and_offload_extra_args_of_a_stack_are_read():
    from gpufleet.sizing import checks

    raw = _prod(
        **{
            "serving.extra_args": {
                "pipeline_parallel_size": 1,
                "data_parallel_size": 1,
                "enable_lora": True,
                "max_lora_rank": 32,
                "cpu_offload_gb": 2,
            }
        }
    )
    fleet = validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    s = checks.serving_of(fleet.spec)
    assert (s.pipeline_parallel, s.data_parallel, s.max_loras, s.max_lora_rank, s.cpu_offload_gb) == (1, 1, 1, 32, 2.0)
    r = fit.measure(models.lookup(fleet.spec.model.catalog or fleet.spec.model.name), fleet.gpu, s)
    assert {t.name: t.gib for t in r.terms}["lora"] > 0 and r.serving["max_loras"] == 1


@pytest.mark.parametrize("value", ["two", -1, 1.5, True])
def test_a_bad_memory_extra_arg_is_a_stack_problem_not_a_traceback(value):
    raw = _prod(**{"serving.extra_args": {"max_loras": value, "enable_lora": True}})
    with pytest.raises(UserError) as exc:
        validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    assert "serving.extra_args.max_loras" in str(exc.value) and "whole number" in str(exc.value)


def test_a_parallel_layout_larger_than_the_node_is_a_stack_problem():
    raw = _prod(**{"serving.extra_args": {"data_parallel_size": 16}})
    with pytest.raises(UserError) as exc:
        validation.validate(raw, stack="alicloud-cn-hangzhou-prod", file="Pulumi.x.yaml")
    assert "data_parallel_size 16" in str(exc.value) and "more than gpu.count" in str(exc.value)


def test_v1_sampler_warm_up_after_the_kv_cache_must_fit_outside_the_budget():
    """V1 warms the sampler up after allocating the KV cache: usable x (1 - gpu_memory_utilization), less the CUDA
    context and graphs captured outside the budget, must hold it (the llmd gpt-oss-20b TP 1 log ran out of memory
    there at 0.95); V0 has no such pass."""
    gpt_oss = models.catalog()["openai/gpt-oss-20b"]
    h100 = fit.custom_gpu(79.19, "9.0")
    base = fit.Serving(vllm_version="0.19.0", max_model_len=8192, max_num_seqs=1024, max_num_batched_tokens=8192)

    def run(**changes):
        return fit.measure(gpt_oss, h100, replace(base, **changes))

    near = run(gpu_memory_utilization=0.95)  # the logged OOM: 2.51 GiB left, a 2.97 GiB warm-up (2.87 logged)
    assert near.verdict == "tight" and any("warming up sampler with 1024 dummy requests" in a for a in near.assumptions)
    over = run(gpu_memory_utilization=0.99)  # 0.79 GiB outside the budget, less than context (0.51) and graphs (0.94)
    assert over.verdict == "does not fit" and any("warming up sampler with 1024" in p for p in over.problems)
    assert "lower max_num_seqs or gpu_memory_utilization" in " ".join(over.problems)
    advice = fit.fit(gpt_oss, h100, replace(base, gpu_memory_utilization=0.99)).advice
    assert "lower gpu_memory_utilization to 0.98 and the sampler warm-up fits outside the budget" in advice
    # a quarter of the warm-up, and the TP 2 run's setting: no warm-up risk, and gpt-oss's structure is modelled
    for quiet in (run(gpu_memory_utilization=0.95, max_num_seqs=256), run(gpu_memory_utilization=0.90)):
        assert quiet.fits and quiet.verdict == "fits" and not any(fit.WARMUP_RISK in a for a in quiet.assumptions)
    eager = run(gpu_memory_utilization=0.99, enforce_eager=True)  # no graphs outside the budget: 0.28 GiB left
    assert eager.verdict == "tight"
    v0 = fit.measure(gpt_oss, h100, replace(base, gpu_memory_utilization=0.99, engine="v0"))
    assert not any("warming up sampler" in p for p in v0.problems)


def test_the_largest_capture_size_follows_the_engine_and_release():
    """Read from the wheels: V1 from 0.10.0 min(2 x max_num_seqs, 512), V1 before it 512 whatever max_num_seqs (0.8.5,
    0.9.2), both at most max_num_batched_tokens; V0 the smallest of 1, 2, 4, 8, 16, ... at least max_num_seqs;
    gpt-oss raises it to 1024."""
    v1, old_v1, v0 = (profiler.engine(v, (8, 6)) for v in ("0.33.0", "0.8.5", "0.6.3"))
    assert profiler.largest_capture_size(v1, 1024, 8192, "gpt_oss") == 1024
    assert profiler.largest_capture_size(v1, 1024, 8192, "llama") == 512
    assert profiler.largest_capture_size(v1, 64, 8192, "llama") == 128
    assert profiler.largest_capture_size(v1, 256, 256, "llama") == 256
    assert profiler.largest_capture_size(old_v1, 1, 2048, "qwen3_moe") == 512  # vllm#17469's run: max_num_seqs 1
    assert profiler.largest_capture_size(old_v1, 1, 256, "qwen3_moe") == 256
    assert profiler.largest_capture_size(v0, 1, 8192, "llama") == 1
    assert profiler.largest_capture_size(v0, 100, 8192, "llama") == 104


def test_mxfp4_experts_on_hopper_take_the_triton_layout():
    """gpt-oss-20b on an H100 (vLLM's Triton mxfp4 backend): one expert at TP 1 is 1472 x 5888 + 1472 x 3072 value
    bytes (1440 packed bytes padded to 64, 5760 / 2880 output rows padded to 256), 5888 x 90 + 3072 x 90 scale bytes
    and (5760 + 2880) x 4 fp32 bias bytes = 14,030,080 B; at TP 2 the intermediate 1440 is first rounded to 1472.
    Other GPUs keep 4.25 bits per expert weight."""
    layout = fit.formats()["mxfp4"]["layout"]["triton_hopper"]
    assert fit.mxfp4_triton_expert_bytes(2880, 2880, layout) == 14_030_080
    tp2 = 1472 * 3072 + 768 * 3072 + 3072 * 90 + 3072 * 46 + (2944 + 2880) * 4
    assert fit.mxfp4_triton_expert_bytes(2880, 1440, layout) == tp2
    gpt_oss = models.catalog()["openai/gpt-oss-20b"]
    hopper = fit.rank_weight_bytes(gpt_oss, "bfloat16", "mxfp4", fit.Serving(), (9, 0))[0]
    ampere = fit.rank_weight_bytes(gpt_oss, "bfloat16", "mxfp4", fit.Serving(), (8, 0))[0]
    assert hopper - ampere == pytest.approx(24 * 32 * 14_030_080 - 19_110_297_600 * 4.25 / 8, rel=1e-9)


def test_v0_pads_mla_cache_entries_to_256_bytes_and_v1_does_not():
    """DeepSeek-V2-Lite: 27 layers x (512 + 64) x 2 B = 31,104 B per token on V1; V0 (from 0.7.2) pads each 1152-byte
    entry to 1280 (vllm#15196 logs 34,553 B per token)."""
    lite = models.catalog()["deepseek-ai/DeepSeek-V2-Lite"]
    v0 = profiler.engine("0.7.2", (8, 9), "v0")
    v1 = profiler.engine("0.8.3", (8, 9), "v1")
    assert fit.kv_bytes_per_token(lite, "bfloat16", "auto", 1, v1) == 27 * 1152 == 31_104
    assert fit.kv_bytes_per_token(lite, "bfloat16", "auto", 1, v0) == 27 * 1280 == 34_560
    assert fit.kv_bytes_per_token(lite, "bfloat16", "auto", 1, profiler.engine("0.7.1", (8, 9), "v0")) == 31_104
    fp8 = fit.kv_bytes_per_token(lite, "bfloat16", "fp8", 1, v0)  # 576 B per entry, padded to 768
    assert fp8 == 27 * 768


def test_cpu_offload_moves_decoder_layers_only():
    """--cpu-offload-gb larger than the decoder layers leaves the embedding and LM head on the GPU."""
    lite = models.catalog()["deepseek-ai/DeepSeek-V2-Lite"]
    s = fit.Serving(cpu_offload_gb=30)
    floor = fit.offload_floor_bytes(lite, "bfloat16", s)[0]
    assert floor == (2 * 102400 * 2048 + 2048) * 2  # embedding, LM head, final norm
    whole = fit.rank_weight_bytes(lite, "bfloat16", None, s)[0]
    assert fit.gpu_weights_gib(whole, floor, 30) == pytest.approx(floor / GIB)
    assert fit.gpu_weights_gib(whole, floor, 13) == pytest.approx(whole / GIB - 13)
    assert fit.gpu_weights_gib(whole, floor, 0) == pytest.approx(whole / GIB)


@pytest.mark.parametrize(
    ("model", "version", "quantization", "ignored"),
    [
        ("Qwen/Qwen2.5-7B-Instruct", "0.21.0", None, False),  # Model Runner V2 opt-in only (VLLM_USE_V2_MODEL_RUNNER)
        ("Qwen/Qwen2.5-7B-Instruct", "0.24.0", None, False),  # Qwen2ForCausalLM not on V2 by default yet
        ("Qwen/Qwen2.5-7B-Instruct", "0.25.0", None, True),  # every dense model on V2 from 0.25.0
        ("Qwen/Qwen2.5-7B-Instruct", "0.26.0", None, True),  # not read: the rule of 0.25.0, the newest read before it
        ("Qwen/Qwen2.5-7B-Instruct", "0.28.0", None, False),  # V2 installs the offloader
        ("meta-llama/Llama-3.1-8B-Instruct", "0.22.0", None, False),  # only Qwen3ForCausalLM in 0.22.0
        ("meta-llama/Llama-3.1-8B-Instruct", "0.23.0", None, True),
        ("meta-llama/Llama-3.1-8B-Instruct", "0.23.0", "awq", False),  # 0.23.0: dense, unquantized checkpoints only
        ("meta-llama/Llama-3.1-8B-Instruct", "0.24.0", "awq", True),
        ("meta-llama/Llama-3.1-8B-Instruct", "0.23.0", "fp8", True),  # online fp8 of a 16-bit checkpoint: is_quantized
        # is the checkpoint's quantization_config (vllm/config/model.py), not --quantization
        ("Qwen/Qwen3-30B-A3B", "0.25.0", None, False),  # MoE and not listed: the V1 runner, which offloads
        ("deepseek-ai/DeepSeek-V2-Lite", "0.25.0", None, True),  # a listed MoE architecture (DeepseekV2ForCausalLM)
    ],
)
def test_cpu_offload_is_ignored_where_model_runner_v2_runs_without_an_offloader(model, version, quantization, ignored):
    """vllm#51396: from 0.22.0 some models run on Model Runner V2 by default, which installs no weight offloader
    before 0.28.0, so --cpu-offload-gb moves nothing (read in each release's vllm/config/vllm.py and
    vllm/v1/worker/gpu/model_runner.py; sizing/data/vllm_engines.yaml cpu_offload_ignored)."""
    arch = models.catalog()[model]
    if not arch.architectures:  # the catalog row gives model_type only (deepseek_v2)
        arch = replace(arch, architectures=("DeepseekV2ForCausalLM",))
    if quantization == "awq":  # an AWQ checkpoint: its config.json carries the quantization_config
        arch = replace(arch, checkpoint_method="awq")
    gpu = fit.Gpu("H100", "9.0", 79.19, "test", False)
    base = fit.Serving(vllm_version=version, quantization=quantization, max_model_len=4096)
    kept = fit.measure(arch, gpu, base)
    r = fit.measure(arch, gpu, replace(base, cpu_offload_gb=4))
    assert (r.weights_gib == pytest.approx(kept.weights_gib)) is ignored
    assert any("cpu_offload_gb 4: ignored by vLLM" in a and "vllm#51396" in a for a in r.assumptions) is ignored
    assert r.serving["cpu_offload_gb"] == 4  # what was asked is still shown


def test_an_offload_that_vllm_ignores_does_not_make_a_model_fit():
    """Llama-3.1-8B on a 16 GiB budget needs its offload: with 0.23.0's V2 runner the weights stay and it does not fit."""
    arch = models.catalog()["meta-llama/Llama-3.1-8B-Instruct"]
    gpu = fit.Gpu("T4", "7.5", 14.56, "test", False)
    asked = fit.Serving(cpu_offload_gb=6, max_model_len=4096, dtype="float16", enforce_eager=True)
    assert fit.measure(arch, gpu, replace(asked, vllm_version="0.28.0")).verdict == "fits"
    assert fit.measure(arch, gpu, replace(asked, vllm_version="0.23.0")).verdict == "does not fit"


def test_block_fp8_through_marlin_adds_group_scales_below_89_only():
    """A block-quantized fp8 checkpoint on a GPU without FP8 compute (Marlin, weight-only) gets one 16-bit scale per
    weight_block_size[1] input rows per output column: 2 B per 128 quantized weights at [128, 128]. Native FP8 (8.9+),
    no GPU named, a checkpoint without weight_block_size, or another format keep their plain bits."""
    assert fit.marlin_group_scale_bits("fp8", (128, 128), (8, 0)) == 16 / 128
    assert fit.marlin_group_scale_bits("fp8", (128, 64), (8, 6)) == 16 / 64  # the input-side block sets the group
    assert fit.marlin_group_scale_bits("fp8", (128, 128), (8, 9)) == 0.0
    assert fit.marlin_group_scale_bits("fp8", (128, 128), None) == 0.0
    assert fit.marlin_group_scale_bits("fp8", None, (8, 0)) == 0.0
    assert fit.marlin_group_scale_bits("awq_marlin", (128, 128), (8, 0)) == 0.0
    v3 = models.catalog()["deepseek-ai/DeepSeek-V3"]
    assert v3.weight_block_size == (128, 128)  # its config.json's quantization_config
    s = fit.Serving(gpus=8)
    quantizable = parallel.rank_params(v3, 8, 1, 1, False)[0].quantizable
    ampere = fit.rank_weight_bytes(v3, "bfloat16", "fp8", s, (8, 0))[0]
    hopper = fit.rank_weight_bytes(v3, "bfloat16", "fp8", s, (9, 0))[0]
    assert ampere - hopper == pytest.approx(quantizable * 2 / 128, rel=1e-12)
    assert (
        fit.rank_weight_bytes(v3, "bfloat16", "awq", s, (8, 0))[0] == fit.rank_weight_bytes(v3, "bfloat16", "awq", s, (9, 0))[0]
    )


def test_auto_dtype_runs_a_float32_checkpoint_in_16_bits():
    """vLLM's dtype auto downcasts a float32 checkpoint to the GPU's preferred 16-bit type (vllm/config/model.py
    _resolve_auto_dtype, "Downcast for float32 models": bfloat16 from compute capability 8.0, else float16); it was
    sized at 4 bytes a parameter, twice what vLLM loads. An explicit --dtype float32 stays float32."""
    from msgspec.structs import replace

    q7 = replace(models.catalog()["Qwen/Qwen2.5-7B-Instruct"], torch_dtype="float32")
    kinds = gpu_kinds()
    assert fit.effective_dtype(q7, kinds["A10"], "auto") == ("bfloat16", None)
    assert fit.effective_dtype(q7, kinds["T4"], "auto") == ("float16", None)
    assert fit.effective_dtype(q7, kinds["A10"], "float32") == ("float32", None)
    auto = fit.measure(q7, kinds["A10"], fit.Serving(dtype="auto", max_model_len=8192))
    bf16 = fit.measure(models.catalog()["Qwen/Qwen2.5-7B-Instruct"], kinds["A10"], fit.Serving(max_model_len=8192))
    assert auto.weights_gib == bf16.weights_gib


def test_a_stack_that_does_not_fit_is_named_by_its_model_and_the_catalog_row_it_is_sized_as():
    # dev serves Qwen2.5-7B-Instruct-AWQ, sized as the Qwen2.5-7B-Instruct catalog row: the message named only the
    # row, so it read as if the unquantised model were served
    fleet = validation.load_fleet("alicloud-cn-hangzhou-dev", ROOT)
    spec = fleet.spec.model_copy(update={"serving": fleet.spec.serving.model_copy(update={"gpu_memory_utilization": 0.3})})
    from gpufleet.sizing.checks import fit_problems

    (field, message), *_ = fit_problems(replace(fleet, spec=spec))
    assert field == "fleet.serving"
    assert message.startswith("Qwen/Qwen2.5-7B-Instruct-AWQ (sized as Qwen/Qwen2.5-7B-Instruct) does not fit 1x T4")


def test_a_quantization_flag_against_the_checkpoints_own_method_is_refused_in_vllms_words():
    """vLLM compares --quantization with the checkpoint's quantization_config.quant_method (ModelConfig.
    _verify_quantization); its Marlin kernels run the same checkpoints, so awq_marlin on an AWQ checkpoint passes."""
    awq = models.catalog()["Qwen/Qwen2.5-72B-Instruct-AWQ"]
    a10 = KINDS["A10"]
    wrong = fit.measure(awq, a10, fit.Serving(gpus=4, quantization="gptq", max_model_len=4096))
    assert wrong.verdict == "does not fit"
    assert any(
        p.startswith(
            "Quantization method specified in the model config (awq) does not match the quantization method specified "
            "in the `quantization` argument (gptq)."
        )
        for p in wrong.problems
    )
    # the argument as given: vLLM formats self.quantization, the _marlin name a user typed (gpt-oss's mxfp4 checkpoint)
    gpt_oss = models.catalog()["openai/gpt-oss-20b"]
    for given in ("awq_marlin", "gptq_marlin"):
        r = fit.measure(gpt_oss, a10, fit.Serving(quantization=given, max_model_len=4096))
        assert any(
            p.startswith(
                "Quantization method specified in the model config (mxfp4) does not match the quantization method "
                f"specified in the `quantization` argument ({given})."
            )
            for p in r.problems
        ), given
    for same in ("awq", "awq_marlin", None):
        r = fit.measure(awq, a10, fit.Serving(gpus=4, quantization=same, max_model_len=4096))
        assert not any("does not match the quantization method" in p for p in r.problems), same


def test_a_quantization_a_16_bit_checkpoint_needs_pre_quantized_is_sized_as_that_checkpoint_and_says_so():
    base = models.catalog()["Qwen/Qwen2.5-7B-Instruct"]
    t4 = KINDS["T4"]
    awq = fit.measure(base, t4, fit.Serving(quantization="awq", max_model_len=8192))
    assert any(a.startswith("quantization awq: sized as this model's awq checkpoint") for a in awq.assumptions)
    for in_flight in ("fp8", "bitsandbytes"):  # vLLM quantizes these itself as it loads
        r = fit.measure(base, KINDS["A10"], fit.Serving(quantization=in_flight, max_model_len=8192))
        assert not any("checkpoint of it" in a for a in r.assumptions), in_flight


def test_a_vllm_newer_than_the_model_follows_or_an_architecture_it_does_not_model_is_at_best_tight():
    """Issue 30: where the model is unsure, the verdict says "tight" with the range, not "fits"."""
    base = models.catalog()["Qwen/Qwen2.5-7B-Instruct"]
    a100 = KINDS["A100-80G"]
    pinned = fit.measure(base, a100, fit.Serving(max_model_len=4096))
    assert pinned.verdict == "fits"
    newer = fit.measure(base, a100, fit.Serving(max_model_len=4096, vllm_version="0.40.0"))
    assert newer.verdict == "tight" and newer.fits
    assert any("newer than the newest version this memory model follows" in a for a in newer.assumptions)
    foo = models.from_config_dict(
        {
            "architectures": ["FooForCausalLM"],
            "model_type": "foo",
            "num_hidden_layers": 24,
            "hidden_size": 2048,
            "num_attention_heads": 16,
            "vocab_size": 32000,
            "intermediate_size": 5632,
        },  # fmt: skip
        "foo/config.json",
    )
    unknown = fit.measure(foo, a100, fit.Serving(max_model_len=4096))
    assert unknown.verdict == "tight" and any("'foo' is not one whose structure" in a for a in unknown.assumptions)


def test_plan_fit_refuses_reserved_memory_of_a_whole_gpu(tmp_path):
    import subprocess
    import sys

    gf = [str(Path(sys.executable).parent / "gpufleet"), "plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10"]
    r = subprocess.run([*gf, "--reserved-gib", "30"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--reserved-gib" in r.stderr and "is all of one GPU's 22.18 GiB" in r.stderr


def _fit_in_process(capsys, *args: str) -> tuple[int, str, str]:
    from gpufleet.cli import main

    capsys.readouterr()
    code = 0
    try:
        main(["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", *args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_plan_fit_bounds_of_a_custom_gpu_and_of_reserved_memory(capsys):
    """The bounds the messages state are inclusive: --gpu-memory-gib "(1-1024)", --compute-capability "between 7.0
    and 12.x" (12.0: NVIDIA's Blackwell RTX 50xx / RTX PRO, sm_120); a value just outside each is refused naming the
    option. --reserved-gib equal to all of the A10's usable 22.18 GiB (the catalog's, as quoted above) leaves vLLM
    nothing and is refused; 0.01 GiB less is a sizing question (answered: exit 0 or 1)."""
    for memory, cc in (("1", "7.0"), ("1024", "12.0")):
        code, out, err = _fit_in_process(capsys, "--gpu-memory-gib", memory, "--compute-capability", cc, "--json")
        assert code in (0, 1) and err == "", err
        terms = {t["name"]: t for t in json.loads(out)["terms"]}
        assert terms["usable_memory"]["gib"] == float(memory)  # the GPU given, taken as given
    for memory, cc, flag, said in (
        ("0.99", "8.6", "--gpu-memory-gib", "give one GPU's total memory in GiB (1-1024)"),
        ("1024.01", "8.6", "--gpu-memory-gib", "give one GPU's total memory in GiB (1-1024)"),
        ("24", "6.1", "--compute-capability", "'6.1' is not M.m between 7.0 and 12.x"),
        ("24", "13.0", "--compute-capability", "'13.0' is not M.m between 7.0 and 12.x"),
    ):
        code, out, err = _fit_in_process(capsys, "--gpu-memory-gib", memory, "--compute-capability", cc)
        assert code == 2 and out == "" and f"error {flag}: {said}" in err, (memory, cc, err)
    code, out, err = _fit_in_process(capsys, "--gpu", "A10", "--reserved-gib", "22.18")
    assert code == 2 and "error --reserved-gib: 22.18 GiB is all of one GPU's 22.18 GiB" in err, err
    code, out, err = _fit_in_process(capsys, "--gpu", "A10", "--reserved-gib", "22.17", "--json")
    assert code in (0, 1) and err == "" and json.loads(out)["serving"]["reserved_gib"] == 22.17


def test_plan_fit_title_counts_every_gpu_and_kv_tokens_are_per_replica(capsys, monkeypatch):
    """The table's title names the GPUs one server uses, TP x PP x DP (by hand: 1; 1 x 1 x 2 = 2; 2 x 2 x 2 = 8), and
    each degree above 1 (TP always); the KV token range is per replica when there are several (--data-parallel-size's
    help: "KV tokens are per replica")."""
    monkeypatch.setenv("COLUMNS", "400")  # the title on one line
    cases = (
        ([], "on 1x A10 (TP 1), bfloat16, ", False),
        (["--data-parallel-size", "2"], "on 2x A10 (TP 1, DP 2), bfloat16, ", True),
        (["--gpus", "2", "--pipeline-parallel-size", "2", "--data-parallel-size", "2"], "on 8x A10 (TP 2, PP 2, DP 2), ", True),
    )
    for extra, title, per_replica in cases:
        code, out, err = _fit_in_process(capsys, "--gpu", "A10", *extra)
        assert code == 0, err
        assert f"Qwen/Qwen2.5-7B-Instruct {title}" in out.splitlines()[0], (extra, out.splitlines()[0])
        (kv,) = [line for line in out.splitlines() if line.startswith("KV tokens within the model's error: ")]
        assert re.fullmatch(r"KV tokens within the model's error: \d+-\d+" + (" per replica" if per_replica else ""), kv), kv


def test_fp8_on_a_t4_follows_the_vllm_release():
    """vLLM's FP8 weight-only Marlin path needs 8.0 up to 0.11.0 and 7.5 from 0.15.0 (is_fp8_marlin_supported and
    Fp8Config.get_min_capability in the wheels; quantization.yaml min_cc_from): the T4 pin (0.33.0) runs fp8."""
    base = models.catalog()["Qwen/Qwen2.5-7B-Instruct"]
    t4 = KINDS["T4"]
    assert fit.min_cc("fp8", "0.11.0") == "8.0" and fit.min_cc("fp8", "0.15.0") == fit.min_cc("fp8", "0.33.0") == "7.5"
    pinned = fit.measure(base, t4, fit.Serving(quantization="fp8", max_model_len=4096))
    assert not any("needs compute capability" in p for p in pinned.problems)
    old = fit.measure(base, t4, fit.Serving(quantization="fp8", max_model_len=4096, vllm_version="0.11.0"))
    said = (
        "The quantization method fp8 is not supported for the current GPU. Minimum capability: 80. Current capability: "
        "75. (vLLM 0.11.0 refuses to start: fp8 needs compute capability >= 8.0 in vLLM 0.11.0; T4 has 7.5;"
    )
    assert any(p.startswith(said) for p in old.problems), old.problems


def test_marlin_int4_on_a_t4_follows_the_vllm_release():
    """AWQ and GPTQ through Marlin need 8.0 up to 0.11.0 and 7.5 from 0.15.0 (get_min_capability and
    query_marlin_supported_quant_types in the wheels): at the T4 pin a GPTQ checkpoint runs as gptq_marlin, at 0.11.0
    as gptq; an explicit format below its minimum is refused in vLLM's words, with what runs instead."""
    gptq = models.catalog()["Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4"]
    t4, v100 = KINDS["T4"], KINDS["V100-32G"]
    for q in ("awq_marlin", "gptq_marlin"):
        assert fit.min_cc(q, "0.11.0") == "8.0" and fit.min_cc(q, "0.15.0") == fit.min_cc(q, "0.33.0") == "7.5"
    assert fit.measure(gptq, t4, fit.Serving(max_model_len=1024, vllm_version="0.33.0")).quantization == "gptq_marlin"
    assert fit.measure(gptq, t4, fit.Serving(max_model_len=1024, vllm_version="0.11.0")).quantization == "gptq"
    old = fit.measure(gptq, t4, fit.Serving(quantization="gptq_marlin", max_model_len=1024, vllm_version="0.11.0"))
    assert (
        "The quantization method gptq_marlin is not supported for the current GPU. Minimum capability: 80. Current "
        "capability: 75. (vLLM 0.11.0 refuses to start: gptq_marlin needs compute capability >= 8.0 in vLLM 0.11.0; "
        "T4 has 7.5; quantization gptq runs the same checkpoint there)"
    ) in old.problems
    awq = fit.measure(gptq, v100, fit.Serving(quantization="awq_marlin", max_model_len=1024, vllm_version="0.33.0"))
    assert any(
        p.startswith("The quantization method awq_marlin is not supported for the current GPU. Minimum capability: 75. ")
        and p.endswith("; a GPU of compute capability 7.5 or newer)")
        for p in awq.problems
    ), awq.problems  # awq itself needs 7.5 too: no other format to name
    w4a16 = fit.measure(gptq, t4, fit.Serving(quantization="w4a16", max_model_len=1024, vllm_version="0.10.0"))
    assert any(
        p.startswith("Quantization scheme is not supported for the current GPU. Min capability: 80. Current capability: 75.")
        for p in w4a16.problems
    ), w4a16.problems


def test_more_than_two_gpus_below_9_0_are_tight_where_only_the_one_gpu_context_leaves_room():
    """vllm#17469's run (Qwen3-30B-A3B, four A10s, V1 0.8.5, max_num_seqs 1): 512 graph sizes captured outside the
    budget and the unmeasured context of four GPUs below 9.0 make it tight; with --enforce-eager (which started) it fits;
    two such GPUs (the Kaggle T4 pairs started) are not held to it, nor four H100s (their context is measured)."""
    a10 = fit.custom_gpu(21.99, "8.6")
    base = fit.Serving(gpus=4, max_model_len=1024, max_num_seqs=1, vllm_version="0.8.5")
    oom = fit.measure(models.catalog()["Qwen/Qwen3-30B-A3B"], a10, base)
    assert oom.verdict == "tight" and any("more than two GPUs below compute capability 9.0" in a for a in oom.assumptions)
    assert fit.measure(models.catalog()["Qwen/Qwen3-30B-A3B"], a10, replace(base, enforce_eager=True)).verdict == "fits"
    small = models.catalog()["Qwen/Qwen3-8B"]
    assert fit.measure(small, a10, base).verdict == "tight"
    assert fit.measure(small, a10, replace(base, gpus=2)).verdict == "fits"
    assert fit.measure(small, fit.custom_gpu(79.19, "9.0"), base).verdict == "fits"


def test_a_checkpoint_method_the_release_does_not_take_is_refused_once():
    """gpt-oss-20b's quant_method mxfp4 on a V100 (its default release 0.10.0 does not list mxfp4): vLLM raises "Unknown
    quantization method" once; the checkpoint's method is also the resolved --quantization, and was listed twice."""
    r = fit.measure(models.catalog()["openai/gpt-oss-20b"], KINDS["V100-32G"], fit.Serving(max_model_len=4096))
    unknown = [p for p in r.problems if p.startswith("Unknown quantization method: mxfp4.")]
    assert r.verdict == "does not fit" and len(unknown) == 1, r.problems


def test_refusals_in_the_tools_own_words_name_their_fix():
    """A refusal says what to change, not only the advice's bigger GPU: the model's limit (Qwen2.5-7B-Instruct's
    config.json max_position_embeddings 32768), and for weights that leave no KV cache, where the memory comes from."""
    q7 = models.lookup("Qwen/Qwen2.5-7B-Instruct")
    long = fit.measure(q7, KINDS["A100-80G"], fit.Serving(max_model_len=65536)).problems
    assert any(p.endswith("above the model's max_position_embeddings (32768); give --max-model-len 32768 or less") for p in long)
    big = fit.measure(models.lookup("meta-llama/Llama-3.1-70B-Instruct"), KINDS["T4"], fit.Serving(max_model_len=4096))
    assert any("leave no KV cache" in p and "split the weights over more GPUs (--gpus)" in p for p in big.problems)


def test_a_v0_result_cites_v0_sources_not_the_v1_files():
    """On V0 (0.6.3) the requested budget and the sampler are not read from 0.33.0's V1 worker and model runner."""
    r = fit.measure(
        models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["A10"], fit.Serving(vllm_version="0.6.3", max_model_len=4096)
    )
    sources = {t.name: t.source for t in r.terms}
    assert (
        r.engine == "V0" and "vllm/v1/" not in sources["requested"] and "determine_num_available_blocks" in sources["requested"]
    )
    assert "V1" not in sources["sampler_warmup"] and "gpu_model_runner" not in sources["sampler_warmup"]
    v1 = {t.name: t.source for t in fit.measure(models.lookup("Qwen/Qwen2.5-7B-Instruct"), KINDS["A10"], fit.Serving()).terms}
    assert "0.33.0 vllm/v1/worker/utils.py:724-726" in v1["requested"]
