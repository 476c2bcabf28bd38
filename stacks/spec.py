"""The fleet spec: the one place where every number of a fleet is chosen.

Read from the `gpufleet:fleet` key of stacks/Pulumi.<stack>.yaml (see loader.py). Field names are
snake_case in YAML. Components, templates and cost functions take values from here only.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from gpufleet.stacks.choices import Dtype, KvCacheDtype
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Cloud = str  # a registered cloud (gpufleet.components.registry), checked by loader.catalog_problems
Environment = Literal["dev", "staging", "prod"]
Billing = Literal["payg", "monthly", "yearly", "spot"]
DiskTier = Literal["standard", "performance", "high"]


class Gpu(Strict):
    kind: str = Field(description="T4, A10, V100-16G, V100-32G, A100-40G or A100-80G")
    count: int = Field(1, ge=1, le=8, description="GPUs per node")
    instance_type: str | None = Field(None, description="a catalog size for this GPU kind and count; default: the smallest")


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
        return self

    @property
    def term_months(self) -> int:
        if self.period_months:
            return self.period_months
        return {"monthly": 1, "yearly": 12}.get(self.model, 0)


class Image(Strict):
    recipe: str = Field(description="an image recipe in images/recipes/; the image id comes from images/lock.json")


SHA256 = re.compile(r"^[0-9a-f]{64}$")


class Model(Strict):
    name: str = Field(min_length=1, description="served model name, e.g. Qwen/Qwen2.5-7B-Instruct")
    source: str = Field(
        description="where the node fetches the weights archive: https:// or a cloud's object storage (oss://, cos://)"
    )
    sha256: str = Field(description="sha256 of the weights archive, checked on the node before vLLM starts")
    catalog: str | None = Field(None, description="sizing catalog entry if it differs from name")

    @field_validator("source")
    @classmethod
    def _source(cls, v: str) -> str:
        from gpufleet.components import registry

        schemes = ["https"] + [registry.profile(c).object_scheme for c in registry.names()]
        if not re.match(rf"^({'|'.join(map(re.escape, schemes))})://\S+$", v):
            raise ValueError(f"must be a {', '.join(s + '://' for s in schemes)} URL of the weights archive")
        return v

    @field_validator("sha256")
    @classmethod
    def _sha(cls, v: str) -> str:
        if not SHA256.match(v):
            raise ValueError("must be 64 lowercase hex characters (sha256sum of the weights archive)")
        return v


class Serving(Strict):
    """vLLM engine arguments rendered into `vllm serve` (names are the flags with _ for -)."""

    port: int = Field(8000, ge=1024, le=65535)
    dtype: Dtype = "auto"
    quantization: Literal["awq", "gptq", "fp8", "bitsandbytes"] | None = None
    kv_cache_dtype: KvCacheDtype = "auto"
    max_model_len: int = Field(8192, ge=256, le=1_048_576)
    gpu_memory_utilization: float = Field(0.90, gt=0.1, le=0.98)
    max_num_seqs: int = Field(64, ge=1, le=4096)
    max_num_batched_tokens: int = Field(8192, ge=256)
    tensor_parallel_size: int = Field(1, ge=1, le=8)
    api_key_secret: str | None = Field(
        None, description="secret name in the cloud's secrets manager; fetched at boot through the instance role"
    )
    extra_args: dict[str, str | int | float | bool] = Field(default_factory=dict, description="other vLLM flags")

    @model_validator(mode="after")
    def _batched(self):
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ValueError("max_num_batched_tokens must be >= max_num_seqs")
        return self


class Disk(Strict):
    tier: DiskTier = "standard"
    size_gib: int = Field(ge=20, le=32768)


class Disks(Strict):
    system: Disk = Disk(tier="standard", size_gib=100)
    data: Disk = Disk(tier="standard", size_gib=200)


class Network(Strict):
    vpc_cidr: str = "10.20.0.0/16"
    subnet_prefix: int = Field(24, ge=16, le=28, description="prefix length of each zone's subnet")
    ssh_cidrs: list[str] = Field(default_factory=list, description="operator CIDRs allowed to SSH to nodes")

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc(cls, v: str) -> str:
        net = ipaddress.ip_network(v, strict=True)
        if not net.is_private:
            raise ValueError(f"{v} is not a private range (use 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16)")
        if not 8 <= net.prefixlen <= 24:
            raise ValueError("VPC prefix must be between /8 and /24")
        return v

    @field_validator("ssh_cidrs")
    @classmethod
    def _ssh(cls, v: list[str]) -> list[str]:
        for cidr in v:
            net = ipaddress.ip_network(cidr, strict=False)
            if net.prefixlen == 0:
                raise ValueError(f"{cidr} opens SSH to the whole internet; name the operator network instead")
        return v

    @model_validator(mode="after")
    def _fits(self):
        if self.subnet_prefix <= ipaddress.ip_network(self.vpc_cidr).prefixlen:
            raise ValueError("subnet_prefix must be longer than the VPC prefix")
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
        if not v.startswith("/"):
            raise ValueError("must start with /")
        return v

    @model_validator(mode="after")
    def _timeout(self):
        if self.timeout_s >= self.interval_s:
            raise ValueError("timeout_s must be shorter than interval_s")
        return self


class LoadBalancer(Strict):
    listener_port: int = Field(80, ge=1, le=65535)
    public: bool = True
    allowed_cidrs: list[str] = Field(default_factory=lambda: ["0.0.0.0/0"], description="clients allowed to reach the listener")
    health_check: HealthCheck = HealthCheck()


class Egress(Strict):
    charge: Literal["traffic", "bandwidth"] = "traffic"
    bandwidth_mbps: int = Field(100, ge=1, le=5000, description="NAT EIP bandwidth cap (traffic) or bought bandwidth")


class Schedule(Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{1,30}$")
    cron: str = Field(description="5-field cron, UTC, e.g. '0 22 * * *'")
    min: int = Field(ge=0)
    max: int = Field(ge=1)
    desired: int | None = None

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str) -> str:
        if len(v.split()) != 5:
            raise ValueError("must have 5 fields: minute hour day-of-month month day-of-week")
        return v

    @model_validator(mode="after")
    def _ordered(self):
        if self.min > self.max or (self.desired is not None and not self.min <= self.desired <= self.max):
            raise ValueError("needs min <= desired <= max")
        return self


class Autoscaling(Strict):
    metric: Literal["cpu_utilization"] = Field(
        "cpu_utilization", description="neither cloud's autoscaler reads GPU metrics natively; see capabilities"
    )
    scale_out_above: int = Field(70, ge=1, le=100)
    scale_in_below: int = Field(20, ge=0, le=99)
    evaluation_minutes: int = Field(5, ge=1, le=60)
    cooldown_s: int = Field(600, ge=60, le=86400)
    schedules: list[Schedule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _band(self):
        if self.scale_in_below >= self.scale_out_above:
            raise ValueError("scale_in_below must be lower than scale_out_above")
        return self


class Threshold(Strict):
    threshold_percent: float = Field(gt=0, le=100)
    minutes: int = Field(ge=1, le=60)


class Alarms(Strict):
    gpu_utilization: Threshold = Threshold(threshold_percent=95, minutes=5)
    gpu_memory: Threshold = Threshold(threshold_percent=98, minutes=1)
    contact_group: str = "gpufleet-oncall"


class FleetSpec(Strict):
    cloud: Cloud
    region: str
    zones: list[str] = Field(min_length=1)
    environment: Environment
    name: str = Field("llm", pattern=r"^[a-z][a-z0-9-]{1,20}$", description="prefix of every resource name")
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
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("zones")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists a zone twice")
        return v
