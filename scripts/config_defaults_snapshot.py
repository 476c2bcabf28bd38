"""Snapshot each architecture's config defaults from the installed `transformers`, as vLLM reads them.

vLLM loads a model's config.json through transformers' configuration class of its `model_type`
(AutoConfig), so a field the file leaves out takes that class's default: Gemma ties its embeddings by
default, Llama does not. `plan fit` must answer in well under a second, and importing transformers and
building AutoConfig takes 5.1-6.4 s here (measured 2026-12-05, transformers 5.25.0, three runs, against
0.26-0.54 s for `import typer, pydantic`: issue 25 allows 2x), so the defaults are read once, here, and
shipped as data (sizing/data/config_defaults.json); sizing/models.py applies them without transformers.

    .venv/bin/python scripts/config_defaults_snapshot.py            # writes sizing/data/config_defaults.json
    .venv/bin/python scripts/config_defaults_snapshot.py --check    # exit 1 when the file differs

For every model_type of transformers' CONFIG_MAPPING whose class has decoder fields, the defaults of its
`__init__` signature (what a config.json without the field gets) for the fields the sizing model reads,
the class's attribute_map (aliases such as GPT-2's n_embd for hidden_size) and, for composite
(multimodal) configs, the model_type of its text_config.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "gpufleet" / "sizing" / "data" / "config_defaults.json"

# The config fields sizing/models.py reads (one list, checked by tests/sizing/test_models.py).
FIELDS = (
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "hidden_act",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    "layer_types",
    "sliding_window_pattern",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "n_shared_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "decoder_sparse_step",
    "mlp_only_layers",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "num_nextn_predict_layers",
)


def _plain(v):
    """JSON-safe defaults only (numbers, strings, bools, None, lists of those)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, str)) for x in v):
        return list(v)
    return "<not a plain value>"


def snapshot() -> dict:
    import transformers
    from transformers import CONFIG_MAPPING

    types: dict[str, dict] = {}
    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            cls = CONFIG_MAPPING[model_type]
        except Exception:  # a lazily imported class whose module needs an optional dependency
            continue
        params = inspect.signature(cls.__init__).parameters
        defaults = {
            f: _plain(params[f].default) for f in FIELDS if f in params and params[f].default is not inspect.Parameter.empty
        }
        sub = getattr(cls, "sub_configs", None) or {}
        text = sub.get("text_config")
        text_type = getattr(text, "model_type", None) if text is not None else None
        aliases = {k: v for k, v in (getattr(cls, "attribute_map", None) or {}).items() if k in FIELDS}
        if "num_hidden_layers" not in defaults and not text_type and not aliases:
            continue  # not a decoder language model (no layer count of its own, no text part)
        row: dict = {"defaults": defaults}
        if aliases:
            row["attribute_map"] = aliases
        if text_type:
            row["text_config_type"] = text_type
        types[model_type] = row
    return {"transformers": transformers.__version__, "fields": list(FIELDS), "types": types}


def render(d: dict) -> str:
    """One line per model_type, so a transformers upgrade shows as a readable diff."""
    rows = [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(d["types"].items())]
    head = f'{{\n "transformers": {json.dumps(d["transformers"])},\n "fields": {json.dumps(d["fields"])},\n "types": {{\n'
    return head + ",\n".join(rows) + "\n }\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    args = ap.parse_args(argv)
    text = render(snapshot())
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT}: differs from the installed transformers' defaults; re-run without --check", file=sys.stderr)
            return 1
        return 0
    from gpufleet.errors import UserError
    from gpufleet.files import write_atomic

    try:
        write_atomic(OUT, text, shown=str(OUT))  # every plan fit reads it: never half a file
    except UserError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
