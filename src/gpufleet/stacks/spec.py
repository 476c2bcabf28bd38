"""The fleet spec: the one place where every number of a fleet is chosen.

Read from the `gpufleet:fleet` key of stacks/Pulumi.<stack>.yaml (see loader.py). Field names are
snake_case in YAML. Components, templates and cost functions take values from here only.
"""

# Annotations are objects here, not postponed (no `from __future__ import annotations`): pydantic would compile each
# annotation string when it builds the models, at every command's start (issue 25, scripts/bench.py --instructions).
import ipaddress
import json
import re
import unicodedata
from datetime import date, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from gpufleet import registry
from gpufleet.cron import SEARCH_DAYS, parse
from gpufleet.files import package_file
from gpufleet.inputs import SHA256_HEX, host_problem
from gpufleet.secret import has_credentials, holds_url_credentials, redact_url
from gpufleet.stacks.choices import Dtype, KvCacheDtype


# Empty (and other mutable) defaults are values, `Field([])`, not `default_factory=list`: pydantic copies a mutable
# default for each model, and a builtin factory makes it read `inspect.signature(list)`, which compiles the tokenize
# module's patterns (~10 ms of every command; images/recipes.py follows the same rule).
class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


def name_problem(value: str, longest: int, what: str, example: str) -> str | None:
    """Why `value` cannot be a name that starts cloud-side names (a fleet's, its name_base, a schedule's): 2 to
    `longest` lowercase letters, digits and single hyphens, starting with a letter and not ending in a hyphen (`a-`
    made names like a--cn-hangzhou-prod-...)."""
    if re.fullmatch(rf"[a-z](?:[a-z0-9]|-(?=[a-z0-9])){{1,{longest - 1}}}", value):
        return None
    return (
        f"{value[:40]!r} is not a {what}: 2-{longest} lowercase letters, digits and single -, starting with a letter "
        f"and not ending in - (e.g. {example})"
    )


def _named(longest: int, what: str, example: str) -> AfterValidator:
    """The field's validator: name_problem as the field's error (None passes: an optional name left out)."""

    def check(v: str | None) -> str | None:
        if v is not None and (why := name_problem(v, longest, what, example)):
            raise ValueError(why)
        return v

    return AfterValidator(check)


VPC_PREFIXES = (8, 24)  # the VPC prefixes a spec takes (each cloud's own range is its contract rule)


def vpc_prefix_problem(prefix: int) -> str | None:
    low, high = VPC_PREFIXES
    return None if low <= prefix <= high else f"VPC prefix /{prefix} is outside /{low} to /{high} (e.g. 10.40.0.0/16)"


Cloud = str  # a registered cloud (gpufleet.registry), checked by loader.catalog_problems
Environment = Literal["dev", "staging", "prod"]
Billing = Literal["payg", "monthly", "yearly", "spot"]
DiskTier = Literal["standard", "performance", "high"]


class Gpu(Strict):
    kind: str = Field(description="T4, A10, V100-16G, V100-32G, A100-40G or A100-80G")
    count: int = Field(1, ge=1, le=8, description="GPUs per node")
    instance_type: str | None = Field(None, description="a catalog size for this GPU kind and count; default: the smallest")

    @field_validator("instance_type")
    @classmethod
    def _instance_type(cls, v: str | None) -> str | None:
        if v == "":  # was read as "not set": the smallest size, silently
            raise ValueError("is empty: remove it for the smallest size of this GPU kind and count, or name a catalog size")
        return v


class Replicas(Strict):
    min: int = Field(ge=0, le=500)
    max: int = Field(ge=1, le=500)
    desired: int | None = Field(None, ge=0, le=500)

    @model_validator(mode="after")
    def _ordered(self):
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max}); set min <= desired <= max")
        if self.desired is not None and not self.min <= self.desired <= self.max:
            raise ValueError(f"desired ({self.desired}) must be between min ({self.min}) and max ({self.max})")
        return self

    @property
    def desired_or_min(self) -> int:
        return self.min if self.desired is None else self.desired


class BillingSpec(Strict):
    model: Billing = "payg"
    period_months: int | None = Field(None, description="subscription term: monthly 1-9, yearly 12/24/36")
    spot_price_limit: float | None = Field(None, gt=0, description="hourly price cap for spot, in the catalog currency")
    on_demand_base: int | None = Field(
        None,
        ge=0,
        le=1000,
        description="with spot: this many nodes are pay-as-you-go and are never reclaimed (prod: at least replicas.min, "
        "so a spot reclaim cannot take the fleet below its minimum); default 0 outside prod",
    )
    on_demand_above_base_percent: int | None = Field(
        None, ge=0, le=100, description="with spot: the share of the nodes above the base that are pay-as-you-go; default 0"
    )

    @model_validator(mode="after")
    def _terms(self):
        if self.model == "monthly" and self.period_months not in (None, *range(1, 10)):
            raise ValueError("period_months for monthly billing must be 1..9")
        if self.model == "yearly" and self.period_months not in (None, 12, 24, 36):
            raise ValueError("period_months for yearly billing must be 12, 24 or 36")
        if self.model in ("payg", "spot") and self.period_months is not None:
            raise ValueError(f"period_months applies to monthly / yearly billing, not {self.model}; remove it")
        if self.spot_price_limit is not None and self.model != "spot":
            raise ValueError("spot_price_limit applies only with model: spot")
        if self.model != "spot" and (self.on_demand_base is not None or self.on_demand_above_base_percent is not None):
            raise ValueError("on_demand_base and on_demand_above_base_percent apply only with model: spot; remove them")
        return self

    @property
    def term_months(self) -> int:
        if self.period_months:
            return self.period_months
        return {"monthly": 1, "yearly": 12}.get(self.model, 0)

    @property
    def base(self) -> int:
        """Pay-as-you-go nodes under the spot ones (0 when not set or not spot)."""
        return self.on_demand_base or 0

    @property
    def above_base_percent(self) -> int:
        return self.on_demand_above_base_percent or 0


class Image(Strict):
    recipe: str = Field(
        description="an image recipe's name: the project's images/recipes/<name>.yaml, else a shipped recipe; the image id "
        "comes from images/lock.json"
    )


SHA256 = re.compile(SHA256_HEX)
# Patterns for every value that reaches a shell, a unit file or cloud-init (issue 14 item 8). `\Z`, not `$`:
# `$` also matches before a trailing newline. Each cloud's own naming rules (bucket, secret) are in
# components/<cloud>/names.py; these are the characters no consumer on the node interprets.
MAX_MODEL_ALIASES = 4  # gpufleet's own bound: a rollout needs one (the current model's name)
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?\Z")


def object_source(schemes: list[str]) -> re.Pattern:
    """An object storage URL of one of the registered clouds' schemes (oss://, cos://, ...): bucket/key."""
    alt = "|".join(map(re.escape, schemes))
    return re.compile(rf"^({alt})://[a-z0-9][a-z0-9-]{{1,61}}[a-z0-9]/[A-Za-z0-9][A-Za-z0-9._/-]{{0,1000}}\Z")


# The characters a value of the node's environment files may hold (components/userdata.py writes them; systemd's
# EnvironmentFile= reads them, and nothing there quotes, escapes or expands them). Spec fields whose value is written
# there as is (model.source, load_balancer.health_check.path) take no other character: one the spec let through
# stopped the preview with a traceback when the user-data was rendered (`~` in a path or an https:// source).
ENV_FILE_CHARS = "A-Za-z0-9_./:@+=,-"
ENV_FILE_WORDS = "letters, digits and _ . / : @ + = , -"
ENV_VALUE = re.compile(rf"^[{ENV_FILE_CHARS}]*\Z")
HTTPS_SOURCE = re.compile(
    r"^https://(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252})(:(?P<port>[0-9]{1,5}))?/[A-Za-z0-9._/+=@,:-]{0,1000}\Z"
)
HEALTH_PATH_MAX = 201  # characters, the leading / included
HEALTH_PATH = re.compile(rf"^/[A-Za-z0-9._/-]{{0,{HEALTH_PATH_MAX - 1}}}\Z")
SECRET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_/+=.@-]{0,191}\Z")
FLAG_NAME = re.compile(r"^[a-z][a-z0-9]*([_-][a-z0-9]+)*\Z")
# extra_args values travel as one argv word (JSON configs included): no quote, backslash, `$`, `%`, backtick or control
# character that a unit file, a shell or systemd's specifier expansion would read.
FLAG_VALUE = re.compile(r'^[A-Za-z0-9 _./:@+=,{}\[\]"-]{1,1024}\Z')
# The most extra_args a stack can hold: the engine arguments of the largest vLLM snapshot (0.33.0: 321 in
# src/gpufleet/sizing/data/vllm_args/0.33.0.json; tests/inputs/test_limits.py keeps this in step with the snapshots).
EXTRA_ARGS_MAX = 321
VLLM_ARGS = Path(__file__).parents[1] / "sizing" / "data" / "vllm_args"  # the snapshots (read by gpufleet.sizing)
# Where a credential given as an extra_args flag would sit in plain text: the stack file (committed), the scaling
# configuration's user-data (anyone who may read the configuration, and the instance metadata), the node's
# /etc/gpufleet/vllm-argv.json (0644) and vLLM's argv (`ps`), and preview's JSON.
IN_THE_CLEAR = "the stack file, the node's user-data and vLLM's command line"
# The vLLM flags that carry a credential, with what to do instead. Every flag of the snapshots
# (sizing/data/vllm_args/<version>.json) whose name holds token, key, secret or password was read, and only these two
# carry one: --api-key (the OpenAI server's bearer key) and --hf-token (the Hugging Face Hub's bearer token for remote
# files); the others name the tokenizer, token counts and thresholds (--max-num-batched-tokens, --spec-tokens) and
# the path --ssl-keyfile. tests/test_injection.py keeps this in step with the snapshots.
CREDENTIAL_FLAGS = {
    "api_key": f"a credential here would sit in plain text in {IN_THE_CLEAR}; name the key's secret in "
    "serving.api_key_secret instead: the node reads it at boot with the instance role",
    "hf_token": f"a credential here would sit in plain text in {IN_THE_CLEAR}; no hub token is needed: the node fetches "
    "the weights at boot from model.source with the instance role and vLLM runs offline (HF_HUB_OFFLINE=1), so put the "
    "weights archive in your bucket and name it in model.source",
}
# Flags gpufleet sets itself or that must not be set from a stack: the reason shown when extra_args names one.
RESERVED_FLAGS = {
    "model": "the weights path is set by gpufleet",
    "served_model_name": "set from model.name",
    "host": "vLLM binds to 127.0.0.1 behind the gateway (docs/gateway.md)",
    "port": "set from serving.gateway.vllm_port",
    "uds": "vLLM listens on 127.0.0.1:serving.gateway.vllm_port",
    **CREDENTIAL_FLAGS,
    "dtype": "set from serving.dtype",
    "quantization": "set from serving.quantization",
    "kv_cache_dtype": "set from serving.kv_cache_dtype",
    "max_model_len": "set from serving.max_model_len",
    "gpu_memory_utilization": "set from serving.gpu_memory_utilization",
    "max_num_seqs": "set from serving.max_num_seqs",
    "max_num_batched_tokens": "set from serving.max_num_batched_tokens",
    "tensor_parallel_size": "set from serving.tensor_parallel_size",
    "disable_log_requests": "prompts are never logged: gpufleet sets this for the vLLM versions that log by default",
    "enable_log_requests": "prompts are never logged (vLLM 0.33 logs request inputs with this flag)",
    "enable_log_outputs": "completions are never logged (vLLM 0.33 logs outputs with this flag)",
    "middleware": "imports and runs arbitrary Python in the API server",
    "allowed_origins": "browsers never call the fleet directly; the gateway owns the HTTP surface",
    "root_path": "the gateway forwards /v1 and /health only",
    "ssl_keyfile": "TLS ends at the load balancer",
    "ssl_certfile": "TLS ends at the load balancer",
}
# A credential inside an extra_args value is refused too: a key of a JSON value that names one (vLLM's tensorizer
# reads s3_secret_access_key from --model-loader-extra-config, vllm/model_executor/model_loader/tensorizer.py; a KV
# connector's settings in --kv-transfer-config are free-form) and a URL with a user or password in it (the one
# detector, secret.has_credentials). A key names a credential when one of its words (snake_case, kebab-case or
# camelCase) is in CREDENTIAL_WORDS, or it ends in <kind> key / <kind> token of a kind in CREDENTIAL_KINDS (written
# apart or run together: hf_token, hftoken), or is `token` holding text: max_tokens, eos_token_id, pad_token,
# s3_access_key_id (an id), kv_connector and {"token": 50256} (a token id) pass. A key whose last word says where a
# credential is kept (REFERENCE_WORDS: secret_name, credentials_path, password_file, token_env) passes: that is what
# the refusal asks for instead.
CREDENTIAL_WORDS = frozenset({"secret", "password", "passwd", "passphrase", "credential", "credentials", "authorization"})
CREDENTIAL_KINDS = {
    "key": frozenset({"api", "access", "secret", "private", "signing", "encryption", "master"}),
    "token": frozenset({"hf", "hub", "access", "auth", "api", "bearer", "session", "security", "refresh", "id", "oidc"}),
}
RUN_TOGETHER = frozenset(kind_of + kind for kind, kinds in CREDENTIAL_KINDS.items() for kind_of in kinds)  # secretkey
REFERENCE_WORDS = frozenset({"path", "file", "dir", "name", "env", "uri", "url", "id"})
# A key as JSON text writes it: a quoted key, or a bare word (`{hf_token: x}`), before a colon.
JSON_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:|[{,]\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*:')


def names_a_credential(name: str) -> bool:
    """Whether a setting's name (a JSON key) names a credential (see CREDENTIAL_WORDS)."""
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name))
    words = [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]
    if not words or words[-1] in REFERENCE_WORDS:
        return False
    if CREDENTIAL_WORDS.intersection(words) or RUN_TOGETHER.intersection(words) or words == ["token"]:
        return True
    return len(words) > 1 and words[-2] in CREDENTIAL_KINDS.get(words[-1], ())


def value_credential(value: str) -> str | None:
    """What credential an extra_args value holds, said without the value: a JSON key naming one, or a URL's user."""
    if holds_url_credentials(value):
        return "holds a URL with a user or password in it"
    if not value.lstrip().startswith(("{", "[")):  # json.loads, which vLLM reads these with, skips leading spaces
        return None
    try:
        data = json.loads(value)
    except (ValueError, RecursionError):
        # JSON that does not parse (a trailing comma, an unquoted value): vLLM refuses it at boot, but by then it sits
        # in the stack file and user-data. Its keys are read as written.
        keys = sorted({k for m in JSON_KEY.finditer(value) if names_a_credential(k := m[1] or m[2])})
        return f"sets a credential ({', '.join(keys)})" if keys else None
    found: list[str] = []
    todo: list[tuple[object, str]] = [(data, "")]  # a loop, not recursion: the value may nest as deep as it is long
    while todo:
        node, path = todo.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            at = f"{path}[{k}]" if isinstance(node, list) else f"{path}.{k}" if path else str(k)
            if isinstance(node, dict) and names_a_credential(str(k)) and _holds_something(str(k), v):
                found.append(at)
            todo.append((v, at))
    return f"sets a credential ({', '.join(sorted(found))})" if found else None


def _holds_something(key: str, v) -> bool:
    """A JSON value that can be a credential: text, a number or a non-empty object or list (not null, "", a flag); under
    a key that is just `token`, text only (a number there is a token id)."""
    if key.lower() == "token" and not isinstance(v, str):
        return False
    return not isinstance(v, bool) and v not in (None, "", {}, [])


class Model(Strict):
    name: str = Field(min_length=1, description="served model name, e.g. Qwen/Qwen2.5-7B-Instruct")
    source: str = Field(
        description="where the node fetches the weights archive: https:// or a cloud's object storage (oss://, cos://)"
    )
    sha256: str = Field(description="sha256 of the weights archive, checked on the node before vLLM starts")
    catalog: str | None = Field(None, description="sizing catalog entry if it differs from name")
    aliases: list[str] = Field(
        default=[],
        max_length=MAX_MODEL_ALIASES,
        description="other names vLLM serves the model under (--served-model-name NAME ALIAS ...): a rollout's candidate "
        "lists the current model's name, so clients that still send it are answered, not refused with 404",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not MODEL_NAME.match(v):
            raise ValueError(
                f"{v!r} is not a model id: use letters, digits, . _ - and at most one / (e.g. Qwen/Qwen2.5-7B-Instruct)"
            )
        return v

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, v: list[str]) -> list[str]:
        for alias in v:
            cls._name(alias)
        if len(set(v)) != len(v):
            raise ValueError(f"{v}: each alias once")
        return v

    @model_validator(mode="after")
    def _not_its_own_alias(self):
        if self.name in self.aliases:
            raise ValueError(f"aliases: {self.name!r} is the model's name already; remove it from aliases")
        return self

    @field_validator("catalog")
    @classmethod
    def _catalog(cls, v: str | None) -> str | None:
        if v == "":  # was read as "not set": sized as model.name, silently
            raise ValueError("is empty: remove it to size the model by its name, or name a sizing catalog entry")
        return v

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        schemes = [registry.profile(c).object_scheme for c in registry.names()]
        if has_credentials(v):  # first, and never shown: a stack file is committed, its problems go to CI logs
            raise ValueError(
                "has credentials in it (user:password@), which would sit in the committed stack file and user-data: "
                f"put the archive in {' or '.join(s + '://' for s in schemes)} object storage, read with the node's role"
            )
        if v.startswith("https://") and "~" in v:  # a URL's unreserved character, but not one the env file takes
            raise ValueError(
                f"{redact_url(v)!r} holds '~': an https:// source is written to the node's environment file "
                f"(systemd EnvironmentFile=), which takes {ENV_FILE_WORDS} only; put the archive at a URL without it "
                "(or in object storage)"
            )
        if https := HTTPS_SOURCE.match(v):  # the host and port as a URL's anywhere (inputs.host_problem)
            if problem := host_problem(https["host"]):
                raise ValueError(f"{redact_url(v)!r}: its host {https['host']!r} {problem}")
            if https["port"] is not None and not 1 <= int(https["port"]) <= 65535:
                raise ValueError(f"{redact_url(v)!r}: port {https['port']} is outside 1-65535")
            return v
        if not object_source(schemes).match(v):
            raise ValueError(
                f"must be an {', '.join(s + '://' for s in schemes)} or https:// URL of the weights archive "
                f"({redact_url(v)!r} is not): "
                "<scheme>://bucket/key or https://host/path; bucket names are lowercase letters, digits and -, keys letters, "
                "digits and . _ / - (no wildcard, space, quote, $, ; or query string)"
            )
        return v

    @field_validator("sha256")
    @classmethod
    def _sha(cls, v: str) -> str:
        if not SHA256.fullmatch(v):
            raise ValueError("must be 64 lowercase hex characters (sha256sum of the weights archive)")
        return v


class Gateway(Strict):
    """nginx on each node in front of vLLM (docs/gateway.md): the only thing listening on serving.port."""

    vllm_port: int = Field(8001, ge=1024, le=65535, description="vLLM listens on 127.0.0.1:<vllm_port>, behind the gateway")
    rate_per_minute: int = Field(120, ge=1, le=60000, description="requests per minute per client address on /v1")
    burst: int = Field(20, ge=0, le=10000, description="requests over the rate that are still served at once")
    client_table_mib: int = Field(
        10, ge=1, le=1024, description="memory for per-client rate state (nginx: 1 MiB holds about 16000 client states)"
    )
    max_body_mib: int = Field(8, ge=1, le=1024, description="largest request body (client_max_body_size)")
    read_timeout_s: int = Field(
        600,
        ge=1,
        le=86400,
        description="longest wait for vLLM's next bytes (proxy_read_timeout); >= load_balancer.request_timeout_s",
    )
    metrics_port: int = Field(9180, ge=1024, le=65535, description="VPC-only port: /metrics/vllm, /metrics/node, /metrics/dcgm")
    node_exporter_port: int = Field(9100, ge=1024, le=65535, description="node_exporter on 127.0.0.1 (its default port)")
    dcgm_exporter_port: int = Field(9400, ge=1024, le=65535, description="dcgm-exporter on 127.0.0.1 (its default port)")


class Serving(Strict):
    """vLLM engine arguments rendered into `vllm serve` (names are the flags with _ for -)."""

    port: int = Field(8000, ge=1024, le=65535)
    dtype: Dtype = "auto"
    quantization: Literal["awq", "gptq", "fp8", "bitsandbytes"] | None = None
    # The KV cache dtypes vLLM offers on CUDA (stacks/choices.py); whether the stack's GPU and vLLM take one is checked
    # by sizing (compute capability, engine).
    kv_cache_dtype: KvCacheDtype = "auto"
    max_model_len: int = Field(8192, ge=256, le=1_048_576)
    gpu_memory_utilization: float = Field(0.90, gt=0.1, le=0.98)
    max_num_seqs: int = Field(64, ge=1, le=4096)
    max_num_batched_tokens: int = Field(8192, ge=256)
    tensor_parallel_size: int = Field(1, ge=1, le=8)
    api_key_secret: str | None = Field(
        None, description="secret name in the cloud's secrets manager; fetched at boot through the instance role"
    )
    extra_args: dict[str, str | int | float | bool] = Field({}, description="other vLLM flags")
    gateway: Gateway = Gateway()

    @field_validator("api_key_secret")
    @classmethod
    def _secret(cls, v: str | None) -> str | None:
        if v is not None and not SECRET_NAME.match(v):
            raise ValueError(
                f"{v!r} is not a secret name: letters, digits and _ / + = . @ - only, starting with a letter or digit "
                "(no wildcard: the node role may read this one secret)"
            )
        return v

    @field_validator("extra_args")
    @classmethod
    def _extra(cls, v: dict) -> dict:
        if len(v) > EXTRA_ARGS_MAX:  # before each flag is checked: 30,000 unknown flags took 80 s to report
            raise ValueError(
                f"{len(v)} flags; vLLM has at most {EXTRA_ARGS_MAX} engine arguments in all (the largest snapshot in "
                f"{package_file(VLLM_ARGS)}/): keep only the flags you set"
            )
        problems = []
        for name, value in v.items():
            key = name.replace("-", "_")
            if not FLAG_NAME.match(name):
                problems.append(f"{name!r} is not a flag name (lowercase letters, digits, _ or -, without the leading --)")
            elif key in RESERVED_FLAGS:
                problems.append(f"{name} cannot be set here: {RESERVED_FLAGS[key]}")
                if key in CREDENTIAL_FLAGS:
                    continue  # its value is the credential: never checked (nor quoted) further
            if isinstance(value, str) and (held := value_credential(value)):
                problems.append(
                    f"{name}: its value {held}: it would sit in plain text in {IN_THE_CLEAR}; remove it (gpufleet hands "
                    "vLLM no secret but the API key of serving.api_key_secret: what vLLM reads must be reachable with "
                    "the node's instance role)"
                )
                continue  # the value is not quoted back
            if isinstance(value, str) and not FLAG_VALUE.match(value):
                # the value is never shown (it may be a token, and the message goes to CI logs): the character is
                bad = next((ch for ch in value if not FLAG_VALUE.match(ch)), "")
                why = f"holds {bad!r}" if bad.isprintable() else f"holds control character U+{ord(bad):04X}"
                why = "is empty" if not value else why if bad else "is longer than 1024 characters"
                problems.append(
                    f"{name}: its value {why}, which is not allowed (no newline, quote, backslash, $, %, ` or other "
                    "control character; 1 to 1024 characters)"
                )
        if problems:
            raise ValueError("; ".join(problems))
        return v

    @model_validator(mode="after")
    def _batched(self):
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError("max_num_batched_tokens must be >= max_num_seqs")
        ports = {
            "serving.port": self.port,
            "serving.gateway.vllm_port": self.gateway.vllm_port,
            "serving.gateway.metrics_port": self.gateway.metrics_port,
            "serving.gateway.node_exporter_port": self.gateway.node_exporter_port,
            "serving.gateway.dcgm_exporter_port": self.gateway.dcgm_exporter_port,
        }
        seen: dict[int, str] = {}
        for field, port in ports.items():
            if port in seen:
                raise ValueError(f"{field} and {seen[port]} are both {port}: each listener on the node needs its own port")
            seen[port] = field
        return self


class Disk(Strict):
    tier: DiskTier = "standard"
    size_gib: int = Field(ge=20, le=32768)


class Disks(Strict):
    system: Disk = Disk(tier="standard", size_gib=100)
    data: Disk = Disk(tier="standard", size_gib=200)
    encrypted: bool = Field(True, description="encrypt the system and data disks with the cloud's default key, where it can")


# An SSH CIDR that is public and wider than this prefix is refused (a /16 is 65536 addresses).
SSH_WIDEST_PUBLIC_PREFIX = 16


# IP family: the program declares IPv4 only. The VPC range is IPv4 on both clouds (Alibaba CreateVpc CidrBlock "the
# primary IPv4 CIDR block", alibabacloud_vpc20160428 7.2.2; Tencent CreateVpc CidrBlock names IPv4 private blocks
# only, tccli 3.1.189.1 vpc api.json), and the CIDRs go into IPv4-only fields: Alibaba
# security group rules' SourceCidrIp ("The source IPv4 CIDR block"; IPv6 is the separate Ipv6SourceCidrIp,
# alibabacloud_ecs20140526 7.11.8 AuthorizeSecurityGroup) and its CLB access control list (IPv4 by default), Tencent
# security group policies' CidrBlock (IPv6 is the separate Ipv6CidrBlock, tccli vpc api.json SecurityGroupPolicy).
IPV4_ONLY = "gpufleet declares IPv4 VPCs and IPv4 security group / access list rules on both clouds"


def cidr_list(v: list[str], ipv4: bool = False) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The CIDRs as networks; ValueError naming the first that is not a network address (host bits set, typo), is
    listed twice, or with ipv4, the first that is IPv6."""
    out = []
    for cidr in v:
        if not isinstance(cidr, str) or "/" not in cidr:
            raise ValueError(f"{cidr!r} is not a CIDR (address/prefix, e.g. 198.51.100.0/24)")
        try:
            net = ipaddress.ip_network(cidr, strict=True)
        except ValueError as exc:
            hint = ""
            try:
                hint = f" (did you mean {ipaddress.ip_network(cidr, strict=False)}?)"
            except ValueError:
                pass
            raise ValueError(f"{cidr!r} is not a network address: {exc}{hint}") from None
        if ipv4 and net.version != 4:
            raise ValueError(f"{cidr} is IPv6; {IPV4_ONLY}: give the IPv4 range (e.g. 198.51.100.0/24)")
        if net in out:  # each CIDR is one security group rule / access list entry: two would be the same rule
            raise ValueError(f"lists {net} twice: name each network once")
        out.append(net)
    return out


class Network(Strict):
    vpc_cidr: str = "10.20.0.0/16"
    subnet_prefix: int = Field(24, ge=16, le=28, description="prefix length of each zone's subnet")
    ssh_cidrs: list[str] = Field([], description="operator CIDRs allowed to SSH to nodes")

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc(cls, v: str) -> str:
        net = ipaddress.ip_network(v, strict=True)
        if net.version != 4:
            raise ValueError(f"{v} is IPv6; {IPV4_ONLY}: use a private IPv4 range (e.g. 10.20.0.0/16)")
        if not net.is_private:
            raise ValueError(f"{v} is not a private range (use 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)")
        if why := vpc_prefix_problem(net.prefixlen):
            raise ValueError(why)
        return v

    @field_validator("ssh_cidrs")
    @classmethod
    def _ssh(cls, v: list[str]) -> list[str]:
        nets = cidr_list(v, ipv4=True)
        merged = ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv4Network))
        if any(n.prefixlen == 0 for n in merged):
            raise ValueError(f"{', '.join(v)} opens SSH to the whole internet; name the operator network instead")
        for cidr, net in zip(v, nets):
            if not net.is_private and net.prefixlen < SSH_WIDEST_PUBLIC_PREFIX:
                raise ValueError(
                    f"{cidr} opens SSH to {net.num_addresses} public addresses; an operator network is at most a "
                    f"/{SSH_WIDEST_PUBLIC_PREFIX} — name it instead"
                )
        return v

    @model_validator(mode="after")
    def _fits(self):
        vpc = ipaddress.ip_network(self.vpc_cidr).prefixlen
        if self.subnet_prefix <= vpc:
            raise ValueError(
                f"subnet_prefix /{self.subnet_prefix} must be longer than the VPC's /{vpc} ({self.vpc_cidr}): each zone's "
                f"subnet is cut from the VPC; give a VPC of /{self.subnet_prefix - 1} or wider, or a longer subnet_prefix"
            )
        return self

    def subnets(self, count: int) -> list[str]:
        """One subnet per zone, in zone order, carved from the VPC range."""
        vpc = ipaddress.ip_network(self.vpc_cidr)
        nets = vpc.subnets(new_prefix=self.subnet_prefix)
        return [str(next(nets)) for _ in range(count)]


class HealthCheck(Strict):
    path: str = "/health"
    interval_s: int = Field(5, ge=2, le=50)
    timeout_s: int = Field(3, ge=1, le=50)
    healthy_threshold: int = Field(2, ge=2, le=10)
    unhealthy_threshold: int = Field(3, ge=2, le=10)
    grace_period_s: int = Field(
        900, ge=0, le=7200, description="time a new node has to load weights before it counts as unhealthy"
    )

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not HEALTH_PATH.match(v):
            odd = sorted({c for c in v[1:] if not HEALTH_PATH.match("/" + c)})
            if v.startswith("/") and not odd:  # only its length
                raise ValueError(f"is {len(v)} characters: write a path of at most {HEALTH_PATH_MAX}")
            raise ValueError(
                "must start with / and be a plain path of letters, digits and . _ / - "
                + (f"({' '.join(map(repr, odd))} {'is not one' if len(odd) == 1 else 'are not'} of them: " if odd else "(")
                + "the path is written to the node's environment file, read by systemd's EnvironmentFile=, and to nginx's config)"
            )
        return v

    @model_validator(mode="after")
    def _timeout(self):
        if self.timeout_s >= self.interval_s:
            raise ValueError("timeout_s must be shorter than interval_s")
        return self


# Pulumi config keys (namespace:name) that hold the PEM pair the program uploads; the key is read as a secret.
CONFIG_KEY = re.compile(r"^[a-z][a-z0-9-]{0,63}:[A-Za-z][A-Za-z0-9_-]{0,127}\Z")
DOMAIN = re.compile(r"^(?=.{1,253}\Z)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\Z")
CERTIFICATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")


class Tls(Strict):
    """HTTPS at the load balancer (docs/tls.md): a certificate already in the cloud's certificate service, or a PEM
    pair from Pulumi secret config that the program uploads."""

    domain: str = Field(description="the name clients call and the certificate is issued for; the endpoint is https://<domain>")
    certificate_id: str | None = Field(None, description="an existing certificate in the cloud's certificate service")
    certificate_config: str | None = Field(None, description="Pulumi secret config key holding the certificate chain (PEM)")
    private_key_config: str | None = Field(None, description="Pulumi secret config key holding the private key (PEM)")
    cipher_policy: Literal["tls1.2", "tls1.2-strict"] = Field(
        "tls1.2-strict", description="TLS 1.2 and later; -strict also drops the non-forward-secret ciphers (Alibaba)"
    )
    redirect_http: bool = Field(False, description="also listen on 80 and redirect plain HTTP to HTTPS (where the cloud can)")

    @field_validator("domain")
    @classmethod
    def _domain(cls, v: str) -> str:
        if not DOMAIN.match(v):
            raise ValueError(f"{v!r} is not a lowercase DNS name (e.g. llm.example.com)")
        return v

    @field_validator("certificate_id")
    @classmethod
    def _cert_id(cls, v: str | None) -> str | None:
        if v is not None and not CERTIFICATE_ID.match(v):
            raise ValueError(f"{v!r} is not a certificate id (letters, digits, _ . -)")
        return v

    @field_validator("certificate_config", "private_key_config")
    @classmethod
    def _config_key(cls, v: str | None) -> str | None:
        if v is not None and not CONFIG_KEY.match(v):
            raise ValueError(f"{v!r} is not a Pulumi config key (namespace:name, e.g. gpufleet:tlsKey)")
        return v

    @model_validator(mode="after")
    def _one_source(self):
        pem = (self.certificate_config, self.private_key_config)
        if self.certificate_config is not None and self.certificate_config == self.private_key_config:
            raise ValueError(
                f"certificate_config and private_key_config are both {self.certificate_config}: the certificate chain "
                "and the private key are two values; name a config key for each (e.g. gpufleet:tlsCertificate, gpufleet:tlsKey)"
            )
        if self.certificate_id is not None and any(pem):
            raise ValueError("name either certificate_id or certificate_config + private_key_config, not both")
        if self.certificate_id is None and not all(pem):
            raise ValueError(
                "needs a certificate: certificate_id (an existing certificate) or both certificate_config and "
                "private_key_config (Pulumi secret config keys holding the PEM pair)"
            )
        return self


class LoadBalancer(Strict):
    listener_port: int = Field(80, ge=1, le=65535, description="80 by default; 443 by default with tls")
    tls: Tls | None = Field(None, description="HTTPS at the load balancer; required in prod with a public load balancer")
    public: bool = True
    allowed_cidrs: list[str] = Field(["0.0.0.0/0"], description="clients allowed to reach the listener")
    request_timeout_s: int = Field(
        180,
        ge=1,
        le=3600,
        description="the listener's request timeout (Alibaba HTTP listeners: 1-180 s); a longer non-streaming request gets a 504",
    )
    health_check: HealthCheck = HealthCheck()

    @model_validator(mode="before")
    @classmethod
    def _https_port(cls, data):
        if isinstance(data, dict) and data.get("tls") and "listener_port" not in data:
            return {**data, "listener_port": 443}
        return data

    @field_validator("allowed_cidrs")
    @classmethod
    def _clients(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("is empty: no client could reach the listener; name the client networks (or 0.0.0.0/0)")
        cidr_list(v, ipv4=True)
        return v


class Egress(Strict):
    charge: Literal["traffic", "bandwidth"] = "traffic"
    bandwidth_mbps: int = Field(100, ge=1, le=5000, description="NAT EIP bandwidth cap (traffic) or bought bandwidth")


class Schedule(Strict):
    name: Annotated[str, _named(31, "schedule name", "business-hours")]
    cron: str = Field(description="5-field cron, UTC, e.g. '0 22 * * *'")
    min: int = Field(ge=0)
    max: int = Field(ge=1)
    desired: int | None = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        if not re.fullmatch(r"[^\s](?:[^\n\r\t]*[^\s])?", v):  # a newline or tab would reach the provider as written
            raise ValueError("must be one line of 5 fields separated by spaces, with no leading or trailing space or newline")
        parse(v)  # CronError is a ValueError: reported on this field
        return v

    @model_validator(mode="after")
    def _ordered(self):
        if self.min > self.max or (self.desired is not None and not self.min <= self.desired <= self.max):
            raise ValueError("needs min <= desired <= max")
        return self


ScalingMetric = Literal["queue", "kv_cache", "cpu_utilization"]


class QueueScaling(Strict):
    """Requests waiting in vLLM's queue, averaged per node over one metric period (vllm:num_requests_waiting).

    vLLM queues a request only when every running slot (serving.max_num_seqs) or the KV cache is taken, so a queue
    that stays above a few requests per node for the evaluation window is a node at capacity, not a burst."""

    scale_out_above: float = Field(
        4,
        gt=0,
        le=10000,
        description="add a node when the average waiting requests per node stay above this (default 4: a full node "
        "with a queue that does not drain within one period)",
    )
    scale_in_below: float = Field(
        0.5,
        ge=0,
        le=10000,
        description="remove a node only when the average waiting per node is below this (default 0.5: nothing waits) "
        "and the KV cache is below kv_cache.scale_in_below",
    )

    @model_validator(mode="after")
    def _band(self):
        if self.scale_in_below >= self.scale_out_above:
            raise ValueError("queue.scale_in_below must be lower than queue.scale_out_above")
        return self


class KvCacheScaling(Strict):
    """KV cache usage in percent, averaged per node (vllm:kv_cache_usage_perc x 100)."""

    scale_out_above: float = Field(
        85,
        gt=0,
        le=100,
        description="add a node when KV cache usage per node stays above this percent (default 85: vLLM preempts "
        "running requests when the cache is full; 85 leaves room for the minutes a new node takes)",
    )
    scale_in_below: float = Field(
        30,
        ge=0,
        lt=100,
        description="remove a node only when KV usage per node is below this percent (default 30: with 2 nodes the "
        "survivor would carry 60%, still below the scale-out threshold, so the fleet does not flap)",
    )

    @model_validator(mode="after")
    def _band(self):
        if self.scale_in_below >= self.scale_out_above:
            raise ValueError("kv_cache.scale_in_below must be lower than kv_cache.scale_out_above")
        return self


class Autoscaling(Strict):
    metric: ScalingMetric = Field(
        "queue",
        description="what drives scaling (docs/scaling.md): queue = vLLM's waiting requests per node (default), "
        "kv_cache = KV cache usage per node, cpu_utilization = the CPU of the nodes (the clouds' built-in metric)",
    )
    queue: QueueScaling = QueueScaling()
    kv_cache: KvCacheScaling = KvCacheScaling()
    scale_out_above: int = Field(70, ge=1, le=100, description="CPU percent to scale out at (metric: cpu_utilization)")
    scale_in_below: int = Field(20, ge=0, le=99, description="CPU percent to scale in at (metric: cpu_utilization)")
    evaluation_minutes: int = Field(
        2,
        ge=1,
        le=10,
        description="one-minute periods the scale-out condition must hold (default 2: the same 2 minutes as the queue "
        "alarm alarms.vllm_queue; a shorter burst is absorbed by the queue)",
    )
    scale_in_evaluation_minutes: int = Field(
        10,
        ge=1,
        le=10,
        description="one-minute periods the scale-in condition must hold (default 10, the most Tencent AS takes: "
        "removing a GPU node is slow to undo)",
    )
    cooldown_s: int = Field(600, ge=60, le=86400)
    drain_timeout_s: int = Field(
        660,
        ge=30,
        le=7200,
        description="how long scale-in waits for a node to drain (the lifecycle hook's and the drain command's timeout); "
        "at least the node's own drain bound: the load balancer's failure detection (health_check.interval_s x "
        "unhealthy_threshold) + serving.gateway.read_timeout_s; default 660 = 15 + 600 with a minute to spare",
    )
    schedules: list[Schedule] = Field([])
    schedule_window_start: date | None = Field(
        None,
        strict=False,  # a quoted "2026-01-05" is a date too
        description="day the schedules' window starts (stored so that `pulumi up` keeps it); default: the day of the run, "
        "kept after creation by ignore_changes. Renew by setting it to today.",
    )
    schedule_window_days: int = Field(364, ge=30, le=3650, description="how long the schedules recur after the window start")
    schedule_lead_minutes: int = Field(
        60, ge=5, le=1440, description="the first firing is at least this long after the run, so it is still ahead at creation"
    )

    @model_validator(mode="after")
    def _band(self):
        if self.scale_in_below >= self.scale_out_above:
            raise ValueError("scale_in_below must be lower than scale_out_above")
        if self.schedule_window_start is not None:
            # the window, and the search for a schedule's first firing in it, must end within the calendar (year 9999):
            # beyond it the dates cannot be written (an OverflowError traceback in preview)
            if (date.max - self.schedule_window_start).days <= self.schedule_window_days + SEARCH_DAYS:
                raise ValueError(
                    f"schedule_window_start {self.schedule_window_start} leaves no room for the schedules' window "
                    f"({self.schedule_window_days} days) before the calendar ends (9999-12-31); set it to today"
                )
        names = [s.name for s in self.schedules]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            # each schedule becomes a resource named after it: two with one name fail a real `pulumi up`
            raise ValueError(f"schedule names must be unique; {', '.join(dupes)} is used more than once")
        return self


class Threshold(Strict):
    threshold_percent: float = Field(gt=0, le=100)
    minutes: int = Field(ge=1, le=60)


class QueueThreshold(Strict):
    waiting_above: int = Field(ge=1, le=100000, description="requests waiting in vLLM's queue (vllm:num_requests_waiting)")
    minutes: int = Field(ge=1, le=60)


# alarms.contact_group reaches CloudMonitor's ContactGroupList / ContactGroups (Alibaba) or AlarmPolicy NoticeIds
# (Tencent); neither API reference states a length or character set (alibabacloud_cms20190101 4.0.10, tccli monitor
# api.json, read 2026-12-05), so gpufleet's own rule: a one-line name of at most 128 characters (gpufleet's cap,
# not a vendor number). Any letter (Chinese names too), no control character.
CONTACT_GROUP_MAX = 128
CONTACT_GROUP = re.compile(
    rf"^(?=.{{1,{CONTACT_GROUP_MAX}}}\Z)[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?\Z", re.S
)


class Alarms(Strict):
    gpu_utilization: Threshold = Threshold(threshold_percent=95, minutes=5)
    gpu_memory: Threshold = Threshold(threshold_percent=98, minutes=1)
    vllm_queue: QueueThreshold = QueueThreshold(waiting_above=100, minutes=2)
    contact_group: str = Field(
        "gpufleet-oncall",
        description="Alibaba: the CloudMonitor alert contact group's name; Tencent: a notification template id (notice-...)",
    )

    @field_validator("contact_group")
    @classmethod
    def _contact(cls, v: str) -> str:
        # an invisible format character (Unicode Cf: U+202E turns the rest of a line around, U+200B is a zero width
        # space) would make the name in the console differ from the one shown here
        if not CONTACT_GROUP.match(v) or any(unicodedata.category(c) == "Cf" for c in v):
            raise ValueError(
                f"{v[:40]!r}{'…' if len(v) > 40 else ''} ({len(v)} characters) is not a contact group name: 1 to "
                f"{CONTACT_GROUP_MAX} characters, no leading or trailing space, no newline, tab or other control "
                "character, no invisible format character (U+200B, U+202E, ...)"
            )
        return v


class Logs(Strict):
    """What the node keeps of its logs (docs/gateway.md): journald caps and the gateway access log's rotation."""

    journal_max_use_mib: int = Field(2048, ge=64, le=65536, description="journald SystemMaxUse")
    journal_max_file_mib: int = Field(128, ge=8, le=4096, description="journald SystemMaxFileSize")
    journal_keep_free_mib: int = Field(4096, ge=0, le=65536, description="journald SystemKeepFree")
    journal_keep_days: int = Field(14, ge=1, le=365, description="journald MaxRetentionSec, in days")
    access_log_keep_days: int = Field(14, ge=1, le=365, description="rotated gateway access logs kept (one a day)")
    access_log_max_mib: int = Field(256, ge=1, le=65536, description="rotate the access log early past this size")

    @model_validator(mode="after")
    def _file(self):
        if self.journal_max_file_mib > self.journal_max_use_mib:
            raise ValueError("journal_max_file_mib must be at most journal_max_use_mib")
        return self


# A short version label of a serving group (issue 31): names its resources <name>-<label>-... (docs/spec.md#rollout).
LABEL = re.compile(r"^[a-z][a-z0-9]{0,7}\Z")
Strategy = Literal["canary", "blue_green"]
RolloutPhase = Literal["rolling", "promoted"]
# The traffic steps a rollout walks through when the stack does not name its own (percent sent to the candidate).
DEFAULT_STEPS: dict[str, tuple[int, ...]] = {"canary": (0, 5, 25, 50, 100), "blue_green": (0, 100)}


def steps_problem(v: list[int]) -> str | None:
    """Why `v` cannot be a rollout's traffic steps (the spec's `rollout.steps`, the plan a state file records); None
    when it can."""
    if not v or any(not 0 <= s <= 100 for s in v) or any(a >= b for a, b in zip(v, v[1:])):
        return f"{v} is not a list of increasing percentages 0-100 (e.g. [0, 5, 25, 50, 100])"
    if v[-1] != 100:
        return f"{v} must end at 100: the last step sends every request to the candidate"
    return None


def _label(v: str | None) -> str | None:
    if v is not None and not LABEL.match(v):
        raise ValueError(
            f"{v!r} is not a version label: a lowercase letter, then at most 7 lowercase letters or digits (e.g. v2)"
        )
    return v


class Candidate(Strict):
    """The serving group a rollout brings in: a second scaling group behind the same load balancer and listener, with
    its own launch / scaling configuration (this model, image, vLLM flags and node type) and scaling rules."""

    label: str = Field(description="names the candidate group: <name>-<label>-...; differs from fleet.label")
    model: Model
    image: Image | None = Field(None, description="default: fleet.image")
    serving: Serving | None = Field(None, description="a whole serving block; default: fleet.serving")
    gpu: Gpu | None = Field(None, description="default: fleet.gpu")
    replicas: Replicas | None = Field(
        None,
        description="the candidate's size while rolling; default canary: min 1, max fleet.replicas.max, desired 1; "
        "blue_green: the fleet's replicas; {min: 0, max: 1, desired: 0} scales a rolled-back candidate to nothing. "
        "Promoted (and after `rollout finish`) the candidate runs at the fleet's replicas",
    )

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        return _label(v) or v


class AnswerGates(Strict):
    prompts: str | None = Field(None, description="a JSONL / YAML file of prompts, relative to the project; null = shipped")
    min_exact_match: float = Field(0.9, ge=0, le=1, description="share of prompts whose answers are exactly the current's")
    min_similarity: float = Field(0.8, ge=0, le=1, description="least mean similarity of the candidate's answers")


class Gates(Strict):
    """What the candidate must hold to go to the next step (read by `gpufleet rollout`)."""

    max_error_rate: float = Field(0.01, ge=0, le=1, description="the candidate's share of failed requests")
    max_latency_p95_ratio: float = Field(1.25, gt=0, le=100, description="candidate p95 latency / current p95, same load")
    max_ttft_p95_ratio: float = Field(1.25, gt=0, le=100, description="candidate p95 time to first token / current p95")
    max_queue_per_node: float | None = Field(None, gt=0, le=10000, description="default: autoscaling.queue.scale_out_above")
    max_kv_cache_percent: float = Field(95, gt=0, le=100)
    answers: AnswerGates = AnswerGates()


class Rollout(Strict):
    """A new model / image / vLLM version brought in as a second serving group (docs/spec.md#rollout)."""

    strategy: Strategy = "canary"
    phase: RolloutPhase = Field(
        "rolling",
        description="rolling: the candidate takes candidate_weight percent of the requests; promoted: the candidate "
        "serves 100 % and the current group is held at its minimum with weight 0 until retire_after",
    )
    candidate_weight: int = Field(
        0, ge=0, le=100, description="percent of requests the load balancer sends to the candidate: 0 or one of the steps"
    )
    steps: list[int] | None = Field(None, description="default canary [0, 5, 25, 50, 100], blue_green [0, 100]")
    keep_previous_hours: int = Field(24, ge=0, le=24 * 90, description="after promote the old group stays this long")
    retire_after: datetime | None = Field(None, strict=False, description="ISO 8601 time with zone, set by `rollout promote`")
    candidate: Candidate
    gates: Gates = Gates()

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and (why := steps_problem(v)):
            raise ValueError(why)
        return v

    @field_validator("retire_after")
    @classmethod
    def _zoned(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.tzinfo is None:
            raise ValueError("needs a zone (e.g. 2026-12-06T14:00:00+00:00): a bare time is read differently on every host")
        return v

    @model_validator(mode="after")
    def _phase(self):
        if self.phase == "promoted" and self.candidate_weight != 100:
            raise ValueError(
                f"phase promoted sends every request to the candidate: candidate_weight must be 100 (is {self.candidate_weight})"
            )
        if self.phase == "rolling" and self.retire_after is not None:
            raise ValueError("retire_after applies to phase promoted only (set by `rollout promote`); remove it")
        return self

    @property
    def plan(self) -> tuple[int, ...]:
        """The traffic steps (percent to the candidate), the stack's or the strategy's default."""
        return tuple(self.steps) if self.steps is not None else DEFAULT_STEPS[self.strategy]


class FleetSpec(Strict):
    cloud: Cloud
    region: str
    zones: list[str] = Field(min_length=1)
    environment: Environment
    name: Annotated[str, _named(21, "fleet name", "qwen")] = Field("llm", description="prefix of every resource name")
    name_base: Annotated[str | None, _named(32, "name base", "llm-prod")] = Field(
        None,
        description="base of the cloud-side resource names; default <name>-<region>-<environment> (gpufleet/naming.py). "
        "Set it to <name>-<environment> only for a stack deployed before names were made account-unique",
    )
    gpu: Gpu
    replicas: Replicas
    billing: BillingSpec = BillingSpec()
    image: Image
    model: Model
    serving: Serving = Serving()
    disks: Disks = Disks()
    network: Network = Network()
    load_balancer: LoadBalancer = LoadBalancer()
    egress: Egress = Egress()
    autoscaling: Autoscaling = Autoscaling()
    alarms: Alarms = Alarms()
    logs: Logs = Logs()
    tags: dict[str, str] = Field({})
    label: str | None = Field(
        None,
        description="a short version label ([a-z][a-z0-9]{0,7}) of the serving group: its resources are named "
        "<name>-<label>-...; default none (the names without a label)",
    )
    rollout: Rollout | None = Field(None, description="a second serving group being rolled out (docs/spec.md#rollout)")

    @field_validator("label")
    @classmethod
    def _label(cls, v: str | None) -> str | None:
        return _label(v)

    @field_validator("zones")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists a zone twice")
        return v

    @property
    def stack_tags(self) -> dict[str, str]:
        """The tags on every resource (checked against each cloud's tag rules by gpufleet/contract.py)."""
        return {"gpufleet:fleet": self.name, "gpufleet:env": self.environment, **self.tags}
