"""Model architecture facts: the catalog in data/models.yaml, or a local Hugging Face config.json by path."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.inputs import read_json_object

CATALOG = Path(__file__).parent / "data" / "models.yaml"


@dataclass(frozen=True)
class ModelArch:
    name: str
    parameters_b: float
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_positions: int
    vocab_size: int
    tied_embeddings: bool
    torch_dtype: str
    source: str
    parameters_estimated: bool = False

    @property
    def embedding_parameters(self) -> float:
        """Input embedding plus lm_head (once when tied), in parameters: kept in 16 bits by the 4/8-bit formats."""
        return self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)


@lru_cache(maxsize=1)
def catalog() -> dict[str, ModelArch]:
    from gpufleet import inputs

    with inputs.shaped("sizing/data/models.yaml"):
        rows = inputs.load_mapping(CATALOG, "sizing/data/models.yaml")["models"]
        return {name: ModelArch(name=name, **row) for name, row in rows.items()}


def lookup(name: str) -> ModelArch | None:
    return catalog().get(name)


def resolve(model: str) -> ModelArch:
    """A catalog name, or the path of a config.json (or of a folder holding one)."""
    path = Path(model)
    if path.suffix == ".json" or path.is_dir():
        return from_config(path / "config.json" if path.is_dir() else path)
    found = lookup(model)
    if found is None:
        raise UserError(
            [
                Problem(
                    "--model",
                    "",
                    f"unknown model {model!r}"
                    + did_you_mean(model, catalog())
                    + "; give a catalog name (sizing/data/models.yaml) or the path of the model's config.json",
                )
            ]
        )
    return found


def _field(cfg: dict, shown: str, *names: str, default=None, minimum: int = 1):
    """A whole number of the config (the first of its names present), at least `minimum`."""
    for n in names:
        if cfg.get(n) is not None:
            v = cfg[n]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
                raise UserError([Problem(shown, n, f"must be a whole number, got {v!r}")])
            if v != int(v) or not minimum <= v < 2**40:
                raise UserError([Problem(shown, n, f"must be a whole number from {minimum} to 2**40, got {v!r}")])
            return int(v)
    if default is not None:
        return default
    raise UserError(
        [
            Problem(
                shown,
                names[0],
                f"missing (also looked for {', '.join(names[1:]) or 'no alias'}); is this a decoder model's config.json?",
            )
        ]
    )


def from_config(path: Path) -> ModelArch:
    shown = str(path)
    cfg = read_json_object(path, "give the path of the model's config.json")
    cfg = cfg.get("text_config", cfg) if isinstance(cfg.get("text_config"), dict) else cfg
    layers = int(_field(cfg, shown, "num_hidden_layers", "num_layers", "n_layer"))
    hidden = int(_field(cfg, shown, "hidden_size", "n_embd", "d_model"))
    heads = int(_field(cfg, shown, "num_attention_heads", "n_head"))
    kv_heads = int(_field(cfg, shown, "num_key_value_heads", "multi_query_group_num", default=heads))
    head_dim = int(_field(cfg, shown, "head_dim", "kv_channels", default=max(hidden // heads, 1)))
    vocab = int(_field(cfg, shown, "vocab_size", "padded_vocab_size"))
    intermediate = int(_field(cfg, shown, "intermediate_size", "ffn_hidden_size", default=4 * hidden))
    tied = bool(cfg.get("tie_word_embeddings", False))
    # Parameters from the architecture (attention q/o + k/v, gated MLP, embeddings): an estimate, said so.
    per_layer = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 3 * hidden * intermediate
    params = layers * per_layer + vocab * hidden * (1 if tied else 2)
    return ModelArch(
        name=str(cfg.get("_name_or_path") or path.parent.name or path.name),
        parameters_b=round(params / 1e9, 2),
        layers=layers,
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=int(_field(cfg, shown, "max_position_embeddings", "seq_length", "n_positions", default=0, minimum=0)),
        vocab_size=vocab,
        tied_embeddings=tied,
        torch_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"),
        source=shown,
        parameters_estimated=True,
    )
