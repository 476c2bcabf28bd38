"""Reading config.json as vLLM does, parameters by structure, the parallel split, formats, GGUF, LoRA, refusals."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from gpufleet.errors import UserError
from gpufleet.sizing import fit, gguf_file, models, parallel, profiler
from gpufleet.stacks.catalog import gpu_kinds

ROOT = Path(__file__).resolve().parents[2]
KINDS = gpu_kinds()
GIB = 2**30
CATALOG = models.catalog()


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_catalog_model_counts_its_card_parameters_within_two_percent(name):
    m, card = CATALOG[name], models.card_parameters_b(name)
    assert card, f"{name}: no card parameter count to check against"
    assert abs(m.parameters_b / card - 1) <= 0.02, f"{name}: {m.parameters_b:.2f}B vs card {card}B"


def test_gpt_oss_counts_the_parameters_vllm_builds():
    """gpt-oss-20b parameter by parameter as vLLM 0.33.0's gpt_oss.py and mxfp4.py build it (hidden 2880, 24 layers,
    64 heads of 64, 8 KV heads, 32 experts of 2880, vocabulary 201088, untied): q/k/v/o with biases and 64 sinks a
    layer, the router with its bias, every expert's gate_up [5760 x 2880] and down [2880 x 2880] with their biases,
    two norms a layer, the final norm, embedding and LM head."""
    m = CATALOG["openai/gpt-oss-20b"]
    attention = 2880 * 4096 + 4096 + 2 * (2880 * 512 + 512) + 4096 * 2880 + 2880 + 64
    experts = 32 * (2880 * 5760 + 5760 + 2880 * 2880 + 2880) + 2880 * 32 + 32
    by_hand = 24 * (attention + experts + 2 * 2880) + 2880 + 2 * 201088 * 2880
    assert m.parameters == by_hand == 20_914_757_184
    assert not m.parameters_estimated  # its structure is modelled: "fits" can be said
    # at TP 2 each GPU keeps its half of the sinks and of gate_up's biases, the down biases and routers whole
    (one,) = parallel.rank_params(m, 1, 1, 1, False)
    (two,) = parallel.rank_params(m, 2, 1, 1, False)
    halved = 24 * (32 * 5760 / 2 + 64 / 2) + 201088 * 2880  # the vocabulary too (embedding and LM head split)
    assert one.kept - two.kept == halved


def test_the_config_copies_are_named_by_their_files_as_sources_records_them():
    """The catalog names a config.json copy by its file (Org--Name.json), without reading SOURCES.yaml: every SOURCES
    row names the same model and its Hub URL, and every copy has a row."""
    rows = models._sources()
    copies = {p.name for p in models.CONFIGS.glob("*.json")}
    assert set(rows) == copies
    for file, row in rows.items():
        name = models._config_name(models.CONFIGS / file)
        assert row["model"] == name and row["hf_url"] == models.hub_config_url(name) == CATALOG[name].source


def test_every_catalog_model_names_its_architectures_and_says_where_they_were_read():
    """vLLM's registry checks (architecture served, pipeline parallel) run on config.json's `architectures`; a catalog
    row without them skipped both (Qwen3-235B-A22B "fits" on 0.7.1, which does not list Qwen3MoeForCausalLM). Every row
    says where they were read, and a row whose model has a config.json copy agrees with the copy."""
    assert all(m.architectures for m in CATALOG.values()), [n for n, m in CATALOG.items() if not m.architectures]
    rows, copies = models._rows(models.CATALOG), models._config_files(models.CONFIGS)
    for name, row in rows.items():
        # where: architectures_read, or the row's `read` where the whole config.json was read from one copy (Gemma)
        assert row["config"].get("architectures") and (row.get("architectures_read") or row.get("read")), name
        if name in copies:
            copy = json.loads(copies[name].read_text(encoding="utf-8"))["architectures"]
            assert row["config"]["architectures"] == copy, name


def test_the_catalog_holds_moe_mla_and_architecture_default_rows():
    assert sum(m.is_moe for m in CATALOG.values()) >= 4 and sum(m.is_mla for m in CATALOG.values()) >= 2
    assert any(m.model_type == "gemma" for m in CATALOG.values())


def test_gemma_ties_its_embeddings_by_its_architectures_default():
    """gemma-7b's config.json has no tie_word_embeddings: transformers' GemmaConfig defaults it to True (Llama's to
    False); read with one default for every architecture the weights come out about 10 % high."""
    g = CATALOG["google/gemma-7b"]
    assert g.tied_embeddings and abs(g.parameters_b - 8.54) < 0.02
    untied = replace(g, tied_embeddings=False)
    assert 1.08 < untied.parameters / g.parameters < 1.11
    assert models.config_defaults()["types"]["gemma"]["defaults"]["tie_word_embeddings"] is True
    assert models.config_defaults()["types"]["llama"]["defaults"]["tie_word_embeddings"] is False


def test_aliases_and_text_config_are_read_as_transformers_reads_them(tmp_path):
    gpt2 = models.from_config_dict({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024}, "x")
    assert (gpt2.layers, gpt2.hidden_size, gpt2.vocab_size, gpt2.tied_embeddings, gpt2.gated_mlp) == (12, 768, 50257, True, False)
    assert abs(gpt2.parameters_b - 0.124) < 0.003  # GPT-2 small's 124M
    composite = models.from_config_dict({"model_type": "gemma3", "text_config": {"hidden_size": 2560, "num_hidden_layers": 34,
        "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 10240, "head_dim": 256}}, "x")  # fmt: skip
    assert composite.model_type == "gemma3_text" and composite.tied_embeddings and composite.vocab_size == 262208
    assert composite.sliding_layers == 34 - 34 // 6  # five local layers to one global (transformers' pattern 6)


def test_moe_structure_routed_shared_and_dense_first_layers():
    v3 = CATALOG["deepseek-ai/DeepSeek-V3"]
    assert len(v3.moe_layer_ids) == 61 - 3 and v3.experts == 256 and v3.shared_intermediate == 2048
    assert 36 < v3.active_parameters_b < 38  # the card's 37B activated
    q15 = CATALOG["Qwen/Qwen1.5-MoE-A2.7B"]
    assert q15.shared_gate and q15.shared_intermediate == 5632 and len(q15.moe_layer_ids) == 24
    assert 2.6 < q15.active_parameters_b < 2.8  # "A2.7B"
    mixtral = CATALOG["mistralai/Mixtral-8x7B-Instruct-v0.1"]
    assert 12.5 < mixtral.active_parameters_b < 13.0  # 12.9B active per token


def test_mla_caches_one_latent_per_layer_on_every_rank():
    v3 = CATALOG["deepseek-ai/DeepSeek-V3"]
    assert fit.kv_bytes_per_token(v3, "bfloat16", "auto") == 61 * (512 + 64) * 2 == 70272
    assert fit.kv_bytes_per_token(v3, "bfloat16", "auto", gpus=8) == 70272  # not split by TP


def test_kv_heads_split_over_tp_and_replicated_below_one_per_rank():
    glm = CATALOG["THUDM/glm-4-9b-chat"]  # 2 KV heads
    per = [fit.kv_bytes_per_token(glm, "bfloat16", "auto", gpus=tp) for tp in (1, 2, 4)]
    assert per == [2 * 40 * 2 * 128 * 2, 2 * 40 * 1 * 128 * 2, 2 * 40 * 1 * 128 * 2]


def test_heads_not_divisible_by_tp_is_refused_in_vllms_words():
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]  # 28 heads
    r = fit.measure(q7, KINDS["A10"], fit.Serving(gpus=3, max_model_len=8192))
    assert r.verdict == "does not fit" and not r.fits
    said = " ".join(r.problems)
    assert "Total number of attention heads (28) must be divisible by tensor parallel size (3)." in said
    assert "1, 2, 4" in said  # the fix: a size that divides 28


def test_pipeline_stages_split_layers_as_vllm_does_and_too_many_are_refused():
    assert [len(s) for s in parallel.stage_layers(28, 3)] == [9, 10, 9]  # remainder to the stages before the last
    assert [len(s) for s in parallel.stage_layers(80, 4)] == [20, 20, 20, 20]
    tiny = models.from_config_dict({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                                     "vocab_size": 100, "intermediate_size": 128}, "x")  # fmt: skip
    assert any("more than the model's 2 layers" in p for p in parallel.problems(tiny, 1, 4, 1, False, "v1"))


def test_more_pipeline_stages_than_layers_is_refused_alone_with_the_stages_that_fit():
    """PP 29 for 28 layers: the last stage held no layer, so 0 KV tokens, and a second, false problem said the weights
    (1.02 GiB) left no KV cache in a 20.41 GiB budget; the advice said no node size fits. Now the refusal stands alone,
    the KV cache is sized by the stages that hold layers, and the advice names the stage count that fits."""
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]  # 28 layers
    r = fit.fit(q7, KINDS["A10"], fit.Serving(pipeline_parallel=29, max_model_len=4096), KINDS)
    assert r.verdict == "does not fit" and len(r.problems) == 1 and "more than the model's 28 layers" in r.problems[0]
    ok = fit.measure(q7, KINDS["A10"], fit.Serving(pipeline_parallel=28, max_model_len=4096))
    assert r.kv_tokens == ok.kv_tokens > 0
    assert r.advice == ["pipeline_parallel_size 28 (one layer per stage) fits"]


def test_pipeline_parallel_halves_weights_and_kv_per_gpu():
    l70 = CATALOG["meta-llama/Llama-3.1-70B-Instruct"]
    one = fit.measure(l70, KINDS["A100-80G"], fit.Serving(gpus=2, dtype="bfloat16", max_model_len=8192))
    pp = fit.measure(l70, KINDS["A100-80G"], fit.Serving(gpus=2, pipeline_parallel=2, dtype="bfloat16", max_model_len=8192))
    assert pp.weights_gib == pytest.approx(one.weights_gib / 2, rel=0.03)
    assert pp.kv_bytes_per_token == one.kv_bytes_per_token // 2  # 40 of the 80 layers on each GPU
    assert pp.kv_tokens > 2 * one.kv_tokens


@pytest.mark.parametrize("version", ["0.33.0", "0.10.0"])
def test_max_num_batched_tokens_below_max_num_seqs_is_refused_in_vllms_words(version):
    """vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs (the stack spec refuses it too); `plan fit
    --max-num-batched-tokens 100` said fits, exit 0. A value vLLM's defaults fill in is not checked here."""
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]
    r = fit.fit(q7, KINDS["A10"], fit.Serving(max_num_batched_tokens=100, max_model_len=4096, vllm_version=version), KINDS)
    assert r.verdict == "does not fit" and not r.fits
    assert r.problems[0].startswith("max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (256).")
    assert "raise max_num_batched_tokens to at least 256 or lower max_num_seqs to at most 100" in r.problems[0]
    assert "raise max_num_batched_tokens to 256 (max_num_seqs) and it fits" in r.advice
    fine = fit.measure(q7, KINDS["A10"], fit.Serving(max_num_batched_tokens=100, max_num_seqs=100, max_model_len=4096))
    assert fine.verdict == "fits"


def test_a_lora_rank_vllm_has_no_kernels_for_is_refused():
    """vLLM takes max_lora_rank one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (vllm/config/lora.py MaxLoRARanks);
    `plan fit --max-loras 2 --max-lora-rank 17` sized 17-rank slots and said fits."""
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]
    r = fit.measure(q7, KINDS["A10"], fit.Serving(max_loras=2, max_lora_rank=17, max_model_len=4096))
    assert r.verdict == "does not fit" and r.problems[0].startswith("max_lora_rank (17) must be one of (1, 8, 16, 32, 64")
    assert "use max_lora_rank 32" in r.problems[0]
    for rank in fit.LORA_RANKS:
        ok = fit.measure(q7, KINDS["A10"], fit.Serving(max_loras=1, max_lora_rank=rank, max_model_len=4096))
        assert not any("max_lora_rank" in p for p in ok.problems)


def test_expert_parallel_splits_whole_experts_and_refuses_an_uneven_split_on_v1():
    q30 = CATALOG["Qwen/Qwen3-30B-A3B"]  # 128 experts
    tp4 = parallel.rank_params(q30, 4, 1, 1, False)[0]
    ep4 = parallel.rank_params(q30, 4, 1, 1, True)[0]
    assert ep4.expert == pytest.approx(tp4.expert)  # 32 whole experts per rank = each expert split in four
    ep3 = parallel.rank_params(q30, 3, 1, 1, True)[0]
    assert ep3.expert == pytest.approx(48 * 43 * q30.mlp_parameters(768))  # ceil(128 / 3) = 43 on the first ranks
    said = parallel.problems(q30, 3, 1, 1, True, "v1")
    assert any("n_physical_experts=128 must be divisible by ep_size=3" in p for p in said)
    assert not parallel.problems(q30, 3, 1, 1, True, "v0") or "heads" in " ".join(parallel.problems(q30, 3, 1, 1, True, "v0"))


def test_data_parallel_keeps_a_whole_replica_per_group():
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]
    one = fit.measure(q7, KINDS["A10"], fit.Serving(max_model_len=8192))
    dp2 = fit.measure(q7, KINDS["A10"], fit.Serving(data_parallel=2, max_model_len=8192))
    assert dp2.weights_gib == pytest.approx(one.weights_gib) and dp2.kv_tokens == one.kv_tokens


@pytest.mark.parametrize(
    "fmt, bits",
    [("awq", 4 + 20 / 128), ("gptq", 4 + 20 / 128), ("w4a16", 4 + 16 / 128), ("bitsandbytes", 4 + 8 / 64 + 32 / (64 * 256)),
     ("fp8", 8), ("w8a8", 8), ("mxfp4", 4.25)],
)  # fmt: skip
def test_bits_per_weight_count_group_scales_and_zeros(fmt, bits):
    assert fit.bits_per_weight(fmt) == pytest.approx(bits)


def test_gptq_marlin_drops_zero_points_in_dense_layers_and_keeps_them_in_routed_experts():
    """vLLM's Marlin path for GPTQ empties a dense layer's zero points (symmetric checkpoints only) and leaves the MoE
    experts' in the model dtype, 8 columns to one value; awq_marlin keeps AWQ's (quantization.yaml)."""
    assert fit.bits_per_weight("gptq_marlin") == pytest.approx(4 + 16 / 128)
    assert fit.bits_per_weight("gptq_marlin", experts=True) == pytest.approx(4 + 18 / 128)
    assert fit.bits_per_weight("awq_marlin") == fit.bits_per_weight("awq_marlin", experts=True) == pytest.approx(4 + 20 / 128)
    moe = CATALOG["Qwen/Qwen1.5-MoE-A2.7B"]
    r = parallel.rank_params(moe, 1, 1, 1, False)[0]
    want = (r.quantizable - r.expert) * (4 + 16 / 128) / 8 + r.expert * (4 + 18 / 128) / 8 + r.kept * 2
    assert r.expert > 0 and fit.weight_bytes(moe, "float16", "gptq_marlin") == pytest.approx(want)


def test_qwens_own_72b_int4_checkpoints_carry_the_padded_mlp():
    """Qwen pads its quantized 72B checkpoints' MLP to 29696 (models.yaml, derived_from); vllm#11230 logs 38.526 GiB of
    weights for the GPTQ-Int4 one as gptq_marlin keeps it."""
    base, gptq, awq = (CATALOG[f"Qwen/Qwen2.5-72B-Instruct{s}"] for s in ("", "-GPTQ-Int4", "-AWQ"))
    assert base.intermediate_size == 29568 and gptq.intermediate_size == awq.intermediate_size == 29696
    stripped = replace(gptq, intermediate_size=29568, name=base.name, source=base.source, checkpoint_quantization=())
    assert replace(stripped, checkpoint_method=None) == base and gptq.checkpoint_method == "gptq"
    assert gptq.checkpoint_quantization == ("gptq_marlin", "gptq") and awq.checkpoint_quantization == ("awq_marlin", "awq")
    assert fit.weight_bytes(gptq, "float16", "gptq_marlin") / GIB == pytest.approx(38.526 - 0.0078, rel=0.005)


def test_without_quantization_the_checkpoints_own_format_is_sized_as_vllm_runs_it():
    """vLLM runs a checkpoint's quantization_config when --quantization is not given; `plan fit --model
    deepseek-ai/DeepSeek-V3 --gpu A100-80G --gpus 8` counted its FP8 weights in 16 bits (157.94 GiB per GPU against
    80.52), and the AWQ catalog row at TP 1 as 145 GiB of bfloat16."""
    v3 = CATALOG["deepseek-ai/DeepSeek-V3"]
    a100, t4 = KINDS["A100-80G"], KINDS["T4"]
    plain = fit.measure(v3, a100, fit.Serving(gpus=8, max_model_len=4096))
    fp8 = fit.measure(v3, a100, fit.Serving(gpus=8, max_model_len=4096, quantization="fp8"))
    assert plain.quantization == "fp8" and plain.weights_gib == fp8.weights_gib
    assert any("the checkpoint's quantization_config" in a for a in plain.assumptions)
    awq = CATALOG["Qwen/Qwen2.5-72B-Instruct-AWQ"]
    on_a100 = fit.measure(awq, a100, fit.Serving(max_model_len=4096))
    assert on_a100.quantization == "awq_marlin" and on_a100.weights_gib < 40  # vLLM's Marlin kernel from 8.0
    # T4 is 7.5: Marlin from vLLM 0.15.0 (its pin is 0.33.0), the plain AWQ kernel before
    assert fit.measure(awq, t4, fit.Serving(gpus=8, max_model_len=4096)).quantization == "awq_marlin"
    assert fit.measure(awq, t4, fit.Serving(gpus=8, max_model_len=4096, vllm_version="0.11.0")).quantization == "awq"
    gptq = CATALOG["Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4"]
    assert fit.measure(gptq, a100, fit.Serving(max_model_len=4096)).quantization == "gptq_marlin"
    # a given --quantization is taken as given
    assert fit.measure(v3, a100, fit.Serving(gpus=8, max_model_len=4096, quantization="awq")).quantization == "awq"
    # a method or width without a row is said, and sized in 16 bits as before
    cfg = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100}
    int8 = models.from_config_dict({**cfg, "quantization_config": {"quant_method": "gptq", "bits": 8}}, "x")
    assert int8.checkpoint_quantization == () and any("quant_method gptq, 8 bits" in n for n in int8.notes)
    assert fit.measure(int8, a100, fit.Serving(max_model_len=64)).quantization is None
    # compressed-tensors: the weights' scheme of its config groups (W8A8: 8 bits; W4A16: 4 bits in groups of 128)
    for bits, group, want in ((8, None, ("compressed-tensors",)), (4, 128, ("w4a16",)), (4, 32, ())):
        qc = {
            "quant_method": "compressed-tensors",
            "config_groups": {"group_0": {"weights": {"num_bits": bits, "group_size": group}}},
        }
        assert models.from_config_dict({**cfg, "quantization_config": qc}, "x").checkpoint_quantization == want
    for odd in ({"quant_method": "compressed-tensors", "config_groups": "x"}, {"quant_method": ["x"]}):
        assert models.from_config_dict({**cfg, "quantization_config": odd}, "x").checkpoint_quantization == ()
    with pytest.raises(UserError):  # text, not a mapping: vLLM reads quantization_config["quant_method"] and fails
        models.from_config_dict({**cfg, "quantization_config": "fp8"}, "x")


@pytest.mark.parametrize(("quantization", "dtype"), [("awq", "bfloat16"), ("gptq", "bfloat16"), ("gptq", "float32")])
def test_awq_and_gptq_refuse_an_activation_dtype_their_kernels_do_not_take(quantization, dtype):
    """vLLM: 'torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]' (AWQ and
    GPTQ kernels take float16 only); `plan fit --dtype bfloat16 --quantization awq --gpu A10` said fits, exit 0."""
    q7 = CATALOG["Qwen/Qwen2.5-7B-Instruct"]
    r = fit.measure(q7, KINDS["A10"], fit.Serving(dtype=dtype, quantization=quantization, max_model_len=4096))
    said = f"torch.{dtype} is not supported for quantization method {quantization}. Supported dtypes: [torch.float16]"
    assert r.verdict == "does not fit" and r.problems[0].startswith(said) and "use dtype float16" in r.problems[0]
    assert ("or quantization " + quantization + "_marlin") in r.problems[0] if dtype == "bfloat16" else True
    for fine in (fit.Serving(dtype="float16", quantization=quantization, max_model_len=4096),
                 fit.Serving(quantization=quantization, max_model_len=4096),  # auto: the checkpoint's own dtype
                 fit.Serving(dtype=dtype, quantization=f"{quantization}_marlin", max_model_len=4096)):  # fmt: skip
        assert not any("is not supported for quantization method" in p for p in fit.measure(q7, KINDS["A10"], fine).problems)


def test_quantized_weights_keep_embeddings_in_16_bits():
    q72 = CATALOG["Qwen/Qwen2.5-72B-Instruct"]
    gptq = fit.weight_bytes(q72, "float16", "gptq")
    embed = q72.embedding_parameters * 2
    assert gptq == pytest.approx((q72.parameters - q72.embedding_parameters) * (4 + 20 / 128) / 8 + embed, rel=0.005)
    assert 38.4 < gptq / GIB < 38.8  # vllm#11230 logs 38.53 GiB


def test_lora_slots_and_cpu_offload_are_counted():
    l8 = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
    base = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=8192))
    lora = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=8192, max_loras=4, max_lora_rank=64))
    # per layer and slot: rank x (qkv 3 x 4096 + 4096 + 2 x 1024, o 4096 + 4096, gate_up 2 x 4096 + 2 x 14336, down 14336 + 4096)
    per_layer = 64 * (3 * 4096 + 4096 + 2 * 1024 + 4096 + 4096 + 2 * 4096 + 2 * 14336 + 14336 + 4096)
    lora_gib = 4 * 32 * per_layer * 2 / GIB
    assert {t.name: t.gib for t in lora.terms}["lora"] == pytest.approx(lora_gib)
    assert lora.kv_cache_gib == pytest.approx(base.kv_cache_gib - lora_gib)
    off = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=8192, cpu_offload_gb=4))
    assert off.weights_gib == pytest.approx(base.weights_gib - 4) and off.kv_cache_gib == pytest.approx(base.kv_cache_gib + 4)


def test_v0_before_0_8_leaves_the_lora_slots_out_of_the_kv_budget():
    # vllm#14450 / PR #14469: V0 built the LoRA manager after measuring the weights until 0.8.0
    l8 = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]

    def at(version: str, loras: int) -> fit.Fit:
        return fit.measure(
            l8, KINDS["T4"], fit.Serving(max_model_len=2048, vllm_version=version, engine="v0", max_loras=loras, max_lora_rank=32)
        )

    for version, counted in (("0.7.2", False), ("0.7.3", False), ("0.8.0", True), ("0.8.2", True)):
        base, lora = at(version, 0), at(version, 2)
        slots = {t.name: t.gib for t in lora.terms}["lora"]
        assert slots > 0.25  # the slots are shown either way (2 x rank 32 on 32 layers: 0.31 GiB)
        assert lora.kv_cache_gib == pytest.approx(base.kv_cache_gib - (slots if counted else 0.0)), version
        assert lora.overhead_gib == pytest.approx(base.overhead_gib + (slots if counted else 0.0)), version
        assert any("vllm#14450" in a for a in lora.assumptions) is not counted
    v1 = fit.measure(
        l8, KINDS["A10"], fit.Serving(max_model_len=2048, vllm_version="0.7.2", engine="v1", max_loras=2, max_lora_rank=32)
    )
    assert profiler.lora_in_budget(profiler.engine("0.7.2", (8, 6), "v1")) and {t.name: t.gib for t in v1.terms}["lora"] > 0
    # the budget and the slots past the GPU's memory: allocating the KV cache runs out of memory
    over = fit.measure(
        l8,
        KINDS["T4"],
        fit.Serving(
            max_model_len=2048, vllm_version="0.7.2", engine="v0", gpu_memory_utilization=0.99, max_loras=8, max_lora_rank=64
        ),
    )
    assert any("exceed the GPU" in p for p in over.problems) and over.verdict == "does not fit"


def test_verdict_is_tight_near_the_line_and_for_an_architecture_not_modelled():
    l8 = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
    r = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=8192))
    low, high = r.kv_tokens_range
    assert low < r.kv_tokens < high and r.verdict == "fits"
    near = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=(r.kv_tokens + high) // 2))
    assert near.verdict == "tight" and not near.fits  # refused at the central estimate, could start within the error
    just = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=(low + r.kv_tokens) // 2))
    assert just.verdict == "tight" and just.fits
    odd = models.from_config_dict({"model_type": "some_new_arch", "num_hidden_layers": 32, "hidden_size": 4096,
        "num_attention_heads": 32, "vocab_size": 32000}, "x")  # fmt: skip
    wide = fit.measure(odd, KINDS["A10"], fit.Serving(max_model_len=4096))

    def spread(x):
        return (x.kv_tokens_range[1] - x.kv_tokens_range[0]) / x.kv_tokens

    assert odd.parameters_estimated and spread(wide) > 2 * spread(r)
    unknown_version = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=8192, vllm_version="0.9.x", engine="v1"))
    assert not profiler.known_version("0.9.x") and spread(unknown_version) > 2 * spread(r)


def test_v0_and_v1_refuse_a_short_cache_in_their_own_words():
    l8 = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
    v1 = fit.measure(l8, KINDS["A10"], fit.Serving(max_model_len=131072))
    v0 = fit.measure(l8, KINDS["V100-32G"], fit.Serving(max_model_len=131072))
    assert v1.engine == "V1" and any(
        "To serve at least one request with the model's max seq len (131072)" in p for p in v1.problems
    )
    assert v0.engine == "V0" and any(
        "The model's max seq len (131072) is larger than the maximum number" in p for p in v0.problems
    )


def _tiny_gguf(path: Path, leave_out: str = "", arch: str = "llama") -> None:
    """A two-layer llama GGUF written with gguf's own writer: f16 embedding, Q8_0 projections, f32 norms (without the
    metadata key `leave_out`, if given; under another general.architecture, `arch`, if given)."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("tiny-llama")
    for key, add, value in (
        ("block_count", w.add_block_count, 2),
        ("embedding_length", w.add_embedding_length, 64),
    ):
        if key != leave_out:
            add(value)
    w.add_feed_forward_length(128)
    if leave_out != "attention.head_count":
        w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(256)
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float16))
    for i in range(2):
        for name, (rows, cols) in [("attn_q", (64, 64)), ("attn_k", (32, 64)), ("attn_v", (32, 64)), ("attn_output", (64, 64)),
                                   ("ffn_gate", (128, 64)), ("ffn_up", (128, 64)), ("ffn_down", (64, 128))]:  # fmt: skip
            w.add_tensor(
                f"blk.{i}.{name}.weight",
                np.zeros((rows, cols // 32 * 34), dtype=np.uint8),
                raw_dtype=gguf.GGMLQuantizationType.Q8_0,
            )
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(64, dtype=np.float32))
    w.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_metadata_and_tensor_bytes_are_read_with_ggufs_reader(tmp_path):
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    m = models.resolve(str(path))
    assert gguf_file.read(path)[2] == "tiny-llama"
    assert (m.layers, m.hidden_size, m.attention_heads, m.kv_heads, m.head_dim, m.vocab_size) == (2, 64, 4, 2, 16, 100)
    assert m.tied_embeddings  # no output.weight tensor
    assert m.architectures == ("LlamaForCausalLM",)  # as vLLM names a llama GGUF's class (gguf_file.CAUSAL_LM)
    # f16 embedding 100 x 64 x 2 B; per layer Q8_0 (34 bytes per 32 weights) of 4096 + 2 x 2048 + 4096 + 3 x 8192, f32 norm
    per_layer = (4096 + 2 * 2048 + 4096 + 3 * 8192) // 32 * 34 + 64 * 4
    assert m.weight_bytes_given == 100 * 64 * 2 + 2 * per_layer + 64 * 4
    r = fit.measure(m, KINDS["A10"], fit.Serving(max_model_len=256, quantization="gguf", vllm_version="0.20.0"))
    rope = m.rope_positions * m.rotary_dim * 2  # the cos/sin cache vLLM adds to the file's tensors (f16)
    assert rope == m.max_positions * 16 * 2 and r.weights_gib == pytest.approx((m.weight_bytes_given + rope) / GIB)
    assert r.verdict == "tight" and r.fits  # vLLM's GGUF support is experimental: at best "tight", with the range
    assert any("GGUF tensors" in a for a in r.assumptions)
    assert any("vLLM's GGUF support is experimental" in a for a in r.assumptions)
    assert not any("was not checked against its model registry" in a for a in [*r.assumptions, *r.problems])
    # 0.25.0, 0.30.0 and 0.33.0 take no gguf (their QuantizationMethods, sizing/data/vllm_architectures.json)
    gone = fit.measure(m, KINDS["A10"], fit.Serving(max_model_len=256, quantization="gguf", vllm_version="0.33.0"))
    assert gone.verdict == "does not fit" and gone.problems[0].startswith("Unknown quantization method: gguf.")
    assert "vLLM 0.20.0 is the newest release read that takes it" in gone.problems[0]


def test_plan_fit_reads_a_gguf_file_and_a_bad_one_is_one_line_exit_2(tmp_path):
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    gf = [str(Path(sys.executable).parent / "gpufleet"), "plan", "fit", "--gpu", "A10", "--json", "--vllm-version", "0.20.0"]
    ok = subprocess.run([*gf, "--model", str(path), "--max-model-len", "256"], capture_output=True, text=True, timeout=120)
    out = json.loads(ok.stdout)
    assert out["quantization"] == "gguf" and out["verdict"] == "tight" and ok.returncode == 0
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    r = subprocess.run([*gf, "--model", str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "not a readable GGUF file" in r.stderr


@pytest.mark.parametrize("mla_keys", [True, False])
def test_a_deepseek_gguf_reads_its_per_head_widths_dense_layers_and_shared_experts(tmp_path, mla_keys):
    """llama.cpp's converter writes an MLA model's cached widths under attention.key_length (kv_lora_rank + rope = 576)
    and value_length (512), the per-head ones under the _mla keys; read as per-head widths, qk_nope_head_dim came out
    512 for 128. leading_dense_block_count and expert_shared_count were not read (transformers' deepseek_v2 defaults,
    0 and 2, stood in). A file from before the _mla keys has the per-head widths under the plain keys."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "tiny-ds.gguf"
    w = gguf.GGUFWriter(str(path), "deepseek2")
    for add, value in [("block_count", 4), ("embedding_length", 64), ("feed_forward_length", 256), ("head_count", 4),
                       ("head_count_kv", 4), ("context_length", 512), ("rope_dimension_count", 16),
                       ("kv_lora_rank", 32), ("expert_count", 8), ("expert_used_count", 2),
                       ("expert_feed_forward_length", 32), ("expert_shared_count", 1),
                       ("leading_dense_block_count", 1)]:  # fmt: skip
        getattr(w, f"add_{add}")(value)
    if mla_keys:  # the converter since the _mla keys: cached widths under the plain keys
        w.add_key_length(32 + 16)
        w.add_value_length(32)
        w.add_key_length_mla(24 + 16)
        w.add_value_length_mla(24)
    else:
        w.add_key_length(24 + 16)
        w.add_value_length(24)
    w.add_tensor("token_embd.weight", np.zeros((100, 64), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    m = models.resolve(str(path))
    assert (m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == (32, 16, 24, 24)
    assert m.moe_layer_ids == (1, 2, 3) and m.shared_intermediate == 32  # one dense first layer, one shared expert


def test_a_layer_count_no_model_has_is_one_line_not_a_hang(tmp_path):
    """A corrupt GGUF's block_count of 822,083,586 (found by fuzzing) passed as a whole number below 2**40 and
    `plan fit` walked the layers for minutes; a config.json with 1,000,000 layers did too (timed out at 120 s)."""
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    raw = path.read_bytes()
    at = raw.index(b"llama.block_count") + len(b"llama.block_count") + 4  # the key, its uint32 type, the value
    path.write_bytes(raw[:at] + (822083586).to_bytes(4, "little") + raw[at + 4 :])
    with pytest.raises(UserError) as e:
        models.resolve(str(path))
    assert "num_hidden_layers: 822083586 layers is more than any decoder model has" in str(e.value)
    cfg = tmp_path / "config.json"
    base = {"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "num_experts": 8}
    base["architectures"] = ["Qwen3MoeForCausalLM"]
    cfg.write_text(json.dumps({**base, "num_hidden_layers": 1_000_000}))
    with pytest.raises(UserError):
        models.resolve(str(cfg))
    cfg.write_text(json.dumps({**base, "num_hidden_layers": models.MAX_LAYERS, "num_experts_per_tok": 2}))
    deep = models.resolve(str(cfg))  # the most layers taken: sized (the MoE layers are looked up in a set)
    assert fit.measure(deep, KINDS["A10"], fit.Serving(max_model_len=64, pipeline_parallel=2)).kv_bytes_per_token > 0


def test_a_gguf_string_that_is_not_utf8_is_one_line_naming_the_file_and_key(tmp_path):
    """A corrupt byte in a metadata string (general.name) raised UnicodeDecodeError from gguf's reader: a traceback."""
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"tiny-llama", b"\x9biny-llama", 1))
    with pytest.raises(UserError) as e:
        models.resolve(str(path))
    assert f"{path}: general.name: holds text that is not UTF-8" in str(e.value)


def test_a_gguf_header_counting_more_than_the_file_holds_is_refused_before_reading(tmp_path):
    """A corrupt tensor count (2**40) in a large file: GGUFReader walked the zero bytes as tensor infos for hours.
    The header's counts are checked against the file's size first."""
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    raw = bytearray(path.read_bytes())
    raw[8:16] = (2**40).to_bytes(8, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(UserError) as e:
        models.resolve(str(path))
    assert f"{path}: not a readable GGUF file" in str(e.value) and "header counts 1099511627776 tensors" in str(e.value)


def test_a_bad_config_field_is_one_line_with_the_file_and_field(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {"model_type": "llama", "num_hidden_layers": "many", "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}
        )
    )
    with pytest.raises(UserError) as e:
        models.resolve(str(cfg))
    assert "num_hidden_layers" in str(e.value) and str(cfg) in str(e.value)


@pytest.mark.parametrize("kv_heads", [1000, 3])
def test_kv_heads_that_do_not_divide_the_attention_heads_are_refused(tmp_path, kv_heads):
    """num_key_value_heads 1000 for 4 query heads was sized as a 250x KV cache without a word."""
    cfg = tmp_path / "config.json"
    base = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10}
    cfg.write_text(json.dumps({**base, "num_key_value_heads": kv_heads}))
    with pytest.raises(UserError) as e:
        models.resolve(str(cfg))
    assert f"{cfg}: num_key_value_heads: {kv_heads} does not divide num_attention_heads 4" in str(e.value)


@pytest.mark.parametrize(
    ("name", "says"),
    [("m" * 300, "--model: unknown model"), ("m" * 300 + ".json", "cannot read"), ("m" * 300 + ".gguf", "no such GGUF file")],
)
def test_a_model_path_longer_than_the_file_system_allows_is_one_line(tmp_path, name, says):
    """Path.is_dir / is_file raised OSError ENAMETOOLONG on a name of > 255 bytes (a traceback)."""
    with pytest.raises(UserError) as e:
        models.resolve(str(tmp_path / name))
    assert says in str(e.value)


def test_each_model_type_read_from_its_line_is_its_row_of_the_whole_snapshot():
    """with_defaults reads one type's line (type_defaults), not the 150 KB file: every line must be its type's row."""
    types = models.config_defaults()["types"]
    assert len(types) > 500
    assert all(models.type_defaults(t) == row for t, row in types.items())
    assert models.type_defaults("transformers") is None and models.type_defaults("no-such-type") is None


def test_config_defaults_snapshot_reads_the_fields_models_uses_and_matches_transformers():
    snap = models.config_defaults()
    script = (ROOT / "scripts" / "config_defaults_snapshot.py").read_text()
    for f in ("tie_word_embeddings", "n_routed_experts", "kv_lora_rank", "first_k_dense_replace", "moe_intermediate_size"):
        assert f in snap["fields"] and f'"{f}"' in script
    pytest.importorskip("transformers")
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "config_defaults_snapshot.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_the_split_at_one_gpu_holds_exactly_the_counted_parameters(name):
    m = CATALOG[name]
    r = parallel.rank_params(m, 1, 1, 1, False)[0]
    assert (r.quantizable + r.kept) == pytest.approx(m.parameters, rel=1e-5)  # q/k norms and MLA latent norms aside


def test_a_refusal_log_without_memory_is_checked_on_the_structural_refusals():
    from gpufleet.sizing import calibration

    row = {"id": "synthetic-heads", "model": "Qwen/Qwen2.5-7B-Instruct", "vllm": "0.6.3", "engine": "V0",
           "compute_capability": "8.0", "flags": {"tensor_parallel_size": 3}, "outcome": "refused"}  # fmt: skip
    verdict, problems = calibration.verdict_of(row)
    assert verdict == "does not fit" and "Total number of attention heads (28) must be divisible" in problems[0]
    ok = {**row, "flags": {"tensor_parallel_size": 4}}
    assert calibration.verdict_of(ok) == ("tight", [])  # nothing structural: memory unknown, so not "fits"


def test_plan_fit_refuses_model_gpu_and_serving_options_with_a_stack(capsys):
    """`--stack S --model <a 72B>` printed the fit of the stack's own 7B model, exit 0: the options were ignored."""
    from gpufleet.cli import main

    argv = ["plan", "fit", "--stack", "alicloud-cn-hangzhou-prod", "--model", "Qwen/Qwen2.5-72B-Instruct", "--gpus", "2"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--reserved-gib", "1", "--json"])  # --reserved-gib, --cloud and the output options apply to a stack
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err, err
    assert "error --model: not used with --stack (the stack's spec gives the model, GPU and serving flags)" in err
    assert "error --gpus: not used with --stack" in err and "--reserved-gib" not in err and "--json" not in err


def test_plan_fit_refuses_a_lora_rank_without_lora_slots(capsys):
    """--max-lora-rank without --max-loras was ignored (LoRA off), exit 0."""
    from gpufleet.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["plan", "fit", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "A10", "--max-lora-rank", "64", "--json"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "error --max-lora-rank: give --max-loras N too (LoRA is off without it)" in err, err


def test_plan_fit_cli_takes_the_parallel_lora_and_offload_options():
    gf = [str(Path(sys.executable).parent / "gpufleet"), "plan", "fit", "--json", "--gpu", "A10", "--max-model-len", "8192"]
    args = ["--model", "Qwen/Qwen3-30B-A3B", "--gpus", "2", "--data-parallel-size", "2", "--enable-expert-parallel",
            "--max-loras", "2", "--max-lora-rank", "8", "--cpu-offload-gb", "1"]  # fmt: skip
    r = subprocess.run([*gf, *args], capture_output=True, text=True, timeout=120)
    out = json.loads(r.stdout)
    assert (out["gpus"], out["data_parallel"], out["expert_parallel"]) == (2, 2, True)
    assert out["serving"]["max_loras"] == 2 and out["serving"]["cpu_offload_gb"] == 1.0
    terms = {t["name"]: t["gib"] for t in out["terms"]}
    assert terms["lora"] > 0 and out["verdict"] in ("fits", "tight", "does not fit")
    q30 = CATALOG["Qwen/Qwen3-30B-A3B"]
    ep = parallel.rank_params(q30, 2, 1, 2, True)[0]  # 128 experts over TP 2 x DP 2 = 32 per GPU
    rope = q30.rope_positions * q30.rotary_dim * 2  # the rope cos/sin cache: not a layer parameter, never offloaded
    assert terms["weights"] == pytest.approx(((ep.quantizable + ep.kept) * 2 + rope) / GIB - 1, abs=0.002)
    pp = subprocess.run(
        [*gf, "--model", "Qwen/Qwen2.5-7B-Instruct", "--pipeline-parallel-size", "40"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pp.returncode == 1 and "more than the model's 28 layers" in pp.stdout


@pytest.mark.parametrize(
    ("cfg", "shape"),
    [
        ({}, (4096, 128)),  # no rope_scaling: max_position_embeddings x head_dim
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}, (4096, 128)),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, (8192, 128)),
        ({"rope_scaling": {"type": "dynamic", "factor": 4.0}}, (16384, 128)),
        ({"rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 512}}, (20480, 128)),
        ({"partial_rotary_factor": 0.5}, (4096, 64)),
    ],
)
def test_rope_cache_shape_follows_the_scaling_type(cfg, shape):
    assert models.rope_cache_shape(cfg, 4096, 128) == shape


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"rope_scaling": {"type": "linear", "factor": 1e308}}, "rope_scaling.factor: must be at most 1e+06, not 1e+308"),
        ({"rope_scaling": {"type": "linear", "factor": "abc"}}, "rope_scaling.factor: must be a number, got text"),
        ({"rope_scaling": {"type": "dynamic", "factor": -4}}, "rope_scaling.factor: must be above 0, not -4"),
        (
            {"rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": "x"}},
            "rope_scaling.original_max_position_embeddings: must be a number, got text",
        ),
        ({"rope_parameters": {"rope_type": "linear", "factor": [2]}}, "rope_parameters.factor: must be a number, got a list"),
        ({"partial_rotary_factor": "x"}, "partial_rotary_factor: must be a number, got text"),
        ({"partial_rotary_factor": 1e308}, "partial_rotary_factor: must be at most 1, not 1e+308"),
        # the sliding window's numbers (a ValueError traceback; -5 was read as a window of -5 tokens)
        (
            {"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True, "max_window_layers": "x"},
            "max_window_layers: must be a whole number, got 'x'",
        ),
        ({"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": "x"}, "sliding_window_pattern: must be"),
        ({"model_type": "mistral", "sliding_window": -5}, "sliding_window: must be a whole number from 1 to 2**40, got -5"),
        # a MoE's dense layers: 1.5 was a TypeError traceback, "x" read as no dense layer
        (
            {"model_type": "qwen3_moe", "num_experts": 8, "mlp_only_layers": 1.5},
            "mlp_only_layers: expected a list of layer numbers, got a number",
        ),
        (
            {"model_type": "qwen3_moe", "num_experts": 8, "mlp_only_layers": "x"},
            "mlp_only_layers: expected a list of layer numbers, got text",
        ),
        (
            {"model_type": "qwen3_moe", "num_experts": 8, "mlp_only_layers": [1, "2"]},
            "mlp_only_layers: expected a list of layer numbers, got '2' in it",
        ),
    ],
)
def test_a_config_json_rope_or_sliding_window_number_that_cannot_be_read_is_refused(tmp_path, extra, says):
    """plan fit --model config.json: these were ValueError, TypeError and OverflowError tracebacks (a negative factor
    was read as negative positions)."""
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "vocab_size": 32000,
        "intermediate_size": 11008,
        "max_position_embeddings": 4096,
        "torch_dtype": "float16",
        **extra,
    }
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg))
    r = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli import main; main()", "plan", "fit", "--model", str(f), "--gpu", "A10"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and f"error {f}: {says}" in r.stderr, r.stderr


def test_rope_cache_counts_in_the_weights_and_stays_on_the_gpu_under_offload():
    llama = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
    assert (llama.rope_positions, llama.rotary_dim) == (131072, 128)  # llama3 scaling keeps the model's maximum
    assert (
        fit.rope_cache_bytes(llama, "bfloat16") == 131072 * 128 * 2 and fit.rope_cache_bytes(llama, "float32") == 131072 * 128 * 4
    )
    lite = CATALOG["deepseek-ai/DeepSeek-V2-Lite"]
    assert (lite.rope_positions, lite.rotary_dim) == (163840, 64)  # MLA: qk_rope_head_dim
    eng = profiler.engine("0.7.2", (8, 9))
    all_out = fit.stage_weights_gib(lite, "bfloat16", None, fit.Serving(cpu_offload_gb=30), (8, 9), eng)[0]
    floor = fit.offload_floor_bytes(lite, "bfloat16", fit.Serving())[0]
    assert all_out * GIB == pytest.approx(floor + 163840 * 64 * 2)  # layers offloaded: their absorbed matrices too


def test_mla_absorbed_decode_matrices_count_on_v0_07x_only():
    lite = CATALOG["deepseek-ai/DeepSeek-V2-Lite"]
    per_layer = 2048 * 2 * 512 * 2 + 2 * 512 * 2048 * 2 + 2048 * 2 * 64 * 2  # W_Q_UK, W_UV_O, W_QR at TP 8 (2 heads)
    assert fit.mla_absorbed_bytes(lite, "bfloat16", None, 8, profiler.engine("0.7.1", (8, 0))) == per_layer
    assert fit.mla_absorbed_bytes(lite, "bfloat16", None, 8, profiler.engine("0.8.0", (8, 0), "v0")) == 0
    assert fit.mla_absorbed_bytes(lite, "bfloat16", None, 8, profiler.engine("0.6.6", (8, 0))) == 0
    assert fit.mla_absorbed_bytes(CATALOG["Qwen/Qwen2.5-7B-Instruct"], "bfloat16", None, 1, profiler.engine("0.7.1", (8, 0))) == 0
    s = fit.Serving(gpus=8)
    with_abs = fit.stage_weights_gib(lite, "bfloat16", None, s, (8, 0), profiler.engine("0.7.1", (8, 0)))[0]
    without = fit.stage_weights_gib(lite, "bfloat16", None, s, (8, 0), profiler.engine("0.8.0", (8, 0), "v0"))[0]
    assert (with_abs - without) * GIB == pytest.approx(27 * per_layer)


@pytest.mark.parametrize(
    "qc, block",
    [
        ({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, (128, 128)),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, None),  # per-tensor / per-channel: no block
        ({"quant_method": "fp8", "weight_block_size": [128]}, None),
        ({"quant_method": "fp8", "weight_block_size": [0, 128]}, None),
        ("not a mapping", None),
    ],
)
def test_weight_block_size_from_quantization_config(qc, block):
    assert models.weight_block_size({"quantization_config": qc}) == block
    assert models.weight_block_size({}) is None


@pytest.mark.parametrize("key", ["block_count", "embedding_length", "attention.head_count"])
def test_a_gguf_without_its_layer_count_width_or_heads_is_refused_not_sized_from_defaults(tmp_path, key):
    """llama.cpp refuses a model file without them; sizing took the architecture's transformers defaults (32 layers,
    4096 wide) and said "fits"."""
    path = tmp_path / "partial.gguf"
    _tiny_gguf(path, leave_out=key)
    with pytest.raises(UserError) as exc:
        models.resolve(str(path))
    assert f"llama.{key}" in str(exc.value) and "missing from the GGUF metadata" in str(exc.value)


def test_plan_fit_refuses_a_quantization_flag_for_a_gguf_file(tmp_path):
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    gf = [str(Path(sys.executable).parent / "gpufleet"), "plan", "fit", "--gpu", "A10", "--model", str(path)]
    r = subprocess.run([*gf, "--quantization", "awq"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--quantization" in r.stderr and "GGUF file" in r.stderr and "drop --quantization" in r.stderr


def test_a_gguf_architecture_transformers_cannot_read_is_vllms_refusal_with_its_fix(tmp_path):
    """vLLM reads a GGUF file's config through transformers, which refuses architectures outside its GGUF table
    (data/gguf_transformers.yaml). On a V100 the image recipe pins vLLM 0.10.0 with transformers 5.24.0 (its lock): a
    deepseek2 file was "tight" where vLLM does not start; --hf-config-path (the config read from the original
    repository) lifts it. For a vLLM whose transformers is not known the verdict is "tight", saying why."""
    path, llama = tmp_path / "tiny-ds.gguf", tmp_path / "tiny.gguf"
    _tiny_gguf(path, arch="deepseek2")
    _tiny_gguf(llama)
    m = models.resolve(str(path))
    assert m.gguf_architecture == "deepseek2" and profiler.transformers_pin("0.10.0") == "5.24.0"
    s = fit.Serving(max_model_len=256, quantization="gguf")
    r = fit.fit(m, KINDS["V100-32G"], s)
    assert r.vllm_version == "0.10.0" and r.verdict == "does not fit"
    assert r.problems == [
        "GGUF model with architecture deepseek2 is not supported yet. (transformers 5.24.0, which the image recipe "
        "pinning vLLM 0.10.0 installs, reads a GGUF file's config for vLLM, which does not start; give --hf-config-path "
        "with the original model's repository (vLLM reads the config there, not from the file))"
    ]
    assert r.advice == ["give --hf-config-path with the original model's repository (vLLM reads the config there) and it fits"]
    given = fit.measure(m, KINDS["V100-32G"], replace(s, hf_config_path="deepseek-ai/DeepSeek-V2-Lite"))
    assert given.problems == [] and given.verdict == "tight"
    assert any("config from --hf-config-path deepseek-ai/DeepSeek-V2-Lite" in a for a in given.assumptions)
    assert fit.measure(models.resolve(str(llama)), KINDS["V100-32G"], s).problems == []  # llama: every release reads it
    unknown = fit.measure(m, KINDS["A10"], replace(s, vllm_version="0.19.0"))
    assert unknown.problems == [] and unknown.verdict == "tight"
    assert any(
        "every transformers release read (4.53.2 to 5.25.0) refuses architecture 'deepseek2'" in a for a in unknown.assumptions
    )
    # 0.33.0 takes no GGUF at all: that refusal alone, not the config's
    gone = fit.measure(m, KINDS["A10"], s)
    assert len(gone.problems) == 1 and gone.problems[0].startswith("Unknown quantization method: gguf.")
    gf = [str(Path(sys.executable).parent / "gpufleet"), "plan", "fit", "--gpu", "V100-32G", "--max-model-len", "256", "--json"]
    cli = subprocess.run([*gf, "--model", str(path)], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 1 and json.loads(cli.stdout)["problems"] == r.problems
    lifted = subprocess.run([*gf, "--model", str(path), "--hf-config-path", "x/y"], capture_output=True, text=True, timeout=120)
    assert lifted.returncode == 0 and json.loads(lifted.stdout)["verdict"] == "tight"
    alone = subprocess.run(
        [*gf, "--model", "Qwen/Qwen2.5-7B-Instruct", "--hf-config-path", "x/y"], capture_output=True, text=True, timeout=120
    )
    assert alone.returncode == 2 and "--hf-config-path: Qwen/Qwen2.5-7B-Instruct is not a .gguf file" in alone.stderr


def test_the_gguf_table_agrees_with_transformers_own_reader_on_every_llama_cpp_architecture(tmp_path, monkeypatch):
    """data/gguf_transformers.yaml against the installed transformers' own load_gguf_checkpoint (metadata only; its
    torch gate lifted: the check runs before any tensor is read), for every architecture llama.cpp's gguf package
    names, and every recipe lock's transformers is a release the table holds."""
    gguf = pytest.importorskip("gguf")
    transformers = pytest.importorskip("transformers")
    from transformers import modeling_gguf_pytorch_utils as reader

    monkeypatch.setattr(reader, "is_torch_available", lambda: True)
    release = transformers.__version__
    assert gguf_file.transformers_refuses("llama", release) is False, f"transformers {release}: add its row to the table"
    disagree, refused = [], 0
    for i, arch in enumerate(sorted(gguf.MODEL_ARCH_NAMES.values())):
        path = tmp_path / f"{i}.gguf"
        w = gguf.GGUFWriter(str(path), arch)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        try:
            reader.load_gguf_checkpoint(str(path), return_tensors=False)
            said = False
        except ValueError as e:
            said = "is not supported yet" in str(e)
        except Exception:  # noqa: BLE001 -- past the architecture check, the file's missing keys
            said = False
        refused += said
        if said != gguf_file.transformers_refuses(arch, release):
            disagree.append((arch, said))
    assert not disagree and refused > 50  # most of llama.cpp's architectures have no transformers GGUF reader
    for version in profiler.pins():
        pin = profiler.transformers_pin(version)
        assert pin is not None and gguf_file.transformers_refuses("llama", pin) is False, f"vLLM {version}: {pin}"


def test_a_gguf_models_architectures_are_the_class_transformers_maps_its_model_type_to():
    """vLLM's get_config gives a GGUF file's config `architectures` = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]]:
    the table must be transformers' own names, for every model_type a GGUF architecture is read as."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    assert transformers.__version__
    assert set(gguf_file.ARCH_TYPES.values()) <= set(gguf_file.CAUSAL_LM)
    assert gguf_file.CAUSAL_LM == {t: MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[t] for t in gguf_file.CAUSAL_LM}


def test_a_gguf_of_an_architecture_without_a_known_class_says_the_registry_check_was_not_made(tmp_path):
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path, arch="phi3")  # read as model_type phi3, which gguf_file.CAUSAL_LM does not name
    m = models.resolve(str(path))
    assert m.architectures == ()
    r = fit.measure(m, KINDS["A10"], fit.Serving(max_model_len=256, quantization="gguf", vllm_version="0.20.0"))
    assert r.verdict == "tight" and any("was not checked against its model registry" in a for a in r.assumptions)
