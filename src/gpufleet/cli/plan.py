"""`gpufleet plan fit` (does the model fit the GPU) and `gpufleet plan capacity` (how many nodes a peak needs)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import typer
from msgspec.structs import replace

from gpufleet.cli import options, renderers
from gpufleet.errors import Problem, UserError, console, did_you_mean

if TYPE_CHECKING:  # the engines are imported where they are used (below)
    from gpufleet.sizing import fit
    from gpufleet.sizing.models import ModelArch
    from gpufleet.stacks.catalog import GpuKind
    from gpufleet.stacks.loader import Fleet

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

FORMATS = ("table", "json")

plan_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Sizing before anything is paid for: memory fit, node count, and the declared scaling through a day.\n\n"
    "\b\nExamples:\n"
    "  gpufleet plan fit --model Qwen/Qwen2.5-7B-Instruct --gpu A10\n"
    "  gpufleet plan capacity --peak-qps 40 --qps-per-node 6\n"
    "  gpufleet plan scaling --stack alicloud-cn-hangzhou-prod --from-loadtest examples/loadtest-example.json",
)


def register(app: typer.Typer) -> None:
    app.add_typer(plan_app, name="plan")


def _serving_choices(field: str) -> tuple[str, ...]:
    """The values the stack spec accepts for a Literal serving field (one list for the spec and this command)."""
    import typing

    from gpufleet.stacks import choices

    return typing.get_args({"dtype": choices.Dtype, "kv_cache_dtype": choices.KvCacheDtype}[field])


def _choice_problems(checks: list[tuple[str, str | None, Collection[str]]]) -> list[Problem]:
    """A problem for each (flag, value, choices) whose value is given and not one of the choices."""
    return [
        Problem(flag, "", f"unknown {value!r}" + did_you_mean(value, choices))
        for flag, value, choices in checks
        if value is not None and value not in choices
    ]


@plan_app.command("fit")
def fit_cmd(
    ctx: typer.Context,
    model: str | None = typer.Option(
        None,
        "--model",
        help="catalog name (sizing/data/models.yaml, sizing/data/configs/), path of a config.json or a .gguf file",
    ),
    gpu: str | None = typer.Option(
        None, "--gpu", autocompletion=options.complete_gpu, help="T4, A10, V100-16G, V100-32G, A100-40G, A100-80G"
    ),
    gpu_memory_gib: float | None = options.real(
        None,
        "--gpu-memory-gib",
        help="a GPU the catalog lacks: one GPU's total memory as CUDA reports it (vLLM's total_gpu_memory), with "
        "--compute-capability; instead of --gpu",
    ),
    compute_capability: str | None = typer.Option(None, "--compute-capability", help="M.m, e.g. 8.6 (with --gpu-memory-gib)"),
    gpus: int = typer.Option(1, "--gpus", min=1, max=64, help="tensor-parallel size (--tensor-parallel-size)"),
    pipeline_parallel: int = typer.Option(1, "--pipeline-parallel-size", min=1, max=64, help="pipeline stages (layers split)"),
    data_parallel: int = typer.Option(
        1, "--data-parallel-size", min=1, max=64, help="model replicas (KV tokens are per replica)"
    ),
    expert_parallel: bool = typer.Option(
        False, "--enable-expert-parallel", help="MoE: split the experts over TP x DP ranks instead of splitting each expert"
    ),
    max_loras: int = typer.Option(
        0, "--max-loras", min=0, max=256, help="LoRA adapter slots vLLM preallocates (as --enable-lora --max-loras N); 0: off"
    ),
    max_lora_rank: int = typer.Option(16, "--max-lora-rank", min=1, max=512, help="with --max-loras (vLLM's default 16)"),
    cpu_offload_gb: float = options.real(
        0.0, "--cpu-offload-gb", min=0.0, max=4096.0, help="GiB of weights per GPU moved to CPU memory (as vllm serve)"
    ),
    dtype: str = typer.Option(
        "auto", "--dtype", help="weights and activations: auto (the model's, float16 on GPUs without bf16), float16, bfloat16"
    ),
    quantization: str | None = typer.Option(
        None,
        "--quantization",
        help="weight format: awq, gptq (and their _marlin kernels), bitsandbytes, int8, fp8, w8a8 / w4a16 "
        "(compressed-tensors), mxfp4; default: the checkpoint's quantization_config; a .gguf --model is read from its file",
    ),
    kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype", help="auto, float16, bfloat16, fp8, fp8_e4m3, fp8_e5m2"),
    max_model_len: int | None = typer.Option(None, "--max-model-len", min=1, help="default: the model's maximum"),
    max_num_seqs: int | None = typer.Option(None, "--max-num-seqs", min=1, help="default: the pinned vLLM's"),
    max_num_batched_tokens: int | None = typer.Option(None, "--max-num-batched-tokens", min=1, help="default: the pinned vLLM's"),
    gpu_memory_utilization: float | None = options.real(
        None, "--gpu-memory-utilization", min=0.05, max=0.99, help="default: the pinned vLLM's"
    ),
    enforce_eager: bool = typer.Option(False, "--enforce-eager", help="no CUDA graphs (as vllm serve --enforce-eager)"),
    reserved_gib: float = options.real(
        0.0,
        "--reserved-gib",
        min=0.0,
        max=1024.0,
        help="memory other processes hold on each GPU, GiB (what nvidia-smi shows in use before vLLM starts); "
        "counted as the followed vLLM counts it (docs/sizing.md); default 0: the GPU serves vLLM alone",
    ),
    vllm_version: str | None = typer.Option(
        None, "--vllm-version", help="default: the version the image recipe for the GPU pins (newest pin for other GPUs)"
    ),
    hf_config_path: str | None = typer.Option(
        None,
        "--hf-config-path",
        help="a .gguf --model's original repository, as vllm serve --hf-config-path (vLLM reads the config there, "
        "not from the file; the file's metadata is sized)",
    ),
    cloud: str | None = typer.Option(
        None,
        "--cloud",
        autocompletion=options.complete_cloud,
        help="advise only node sizes this cloud sells (alicloud, tencentcloud)",
    ),
    stack: str | None = options.stack(
        required=False,
        help="take model, GPU, serving parameters and cloud from a stack (name or Pulumi.<name>.yaml path); a rollout's "
        "candidate group is sized too",
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Usable memory, weights, runtime overhead and KV cache per GPU, as the pinned vLLM budgets them; fits, tight
    (the verdict could go either way within the model's error: the KV token range is shown) or does not fit, and
    what to change. Exit 1 when it does not fit at the central estimate.

    \b
    Examples:
      gpufleet plan fit --model Qwen/Qwen2.5-7B-Instruct --gpu A10
      gpufleet plan fit --model Qwen/Qwen2.5-7B-Instruct --gpu T4 --quantization awq --max-model-len 8192
      gpufleet plan fit --stack alicloud-cn-hangzhou-prod --format json
      gpufleet plan fit --model Qwen/Qwen2.5-7B-Instruct --gpu-memory-gib 23.58 --compute-capability 8.6
      gpufleet plan fit --model Qwen/Qwen3-30B-A3B --gpu A10 --gpus 4 --enable-expert-parallel
    """
    from gpufleet.sizing import checks, fit, models, profiler
    from gpufleet.stacks.catalog import clouds, gpu_kinds

    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [stack]))

    custom = gpu_memory_gib is not None or compute_capability is not None
    if custom and (gpu or stack or cloud):
        raise UserError(
            [
                Problem(
                    "--gpu-memory-gib / --compute-capability",
                    "",
                    "describe a GPU the catalog lacks: not with --gpu, --stack or --cloud",
                )
            ]
        )
    if stack and (ignored := options.given(ctx, but=("stack", "reserved_gib", "cloud", "fmt", "as_json", "output"))):
        # the stack's spec gives the model, the GPU and the serving flags: `--stack S --model <a 72B>` printed the
        # stack's own 7B model fitting, exit 0
        raise UserError(
            [
                Problem(flag, "", "not used with --stack (the stack's spec gives the model, GPU and serving flags): drop one")
                for flag in ignored
            ]
        )
    if stack:
        from gpufleet.validation import load_fleet

        fleet = load_fleet(stack, sizing=False)  # plan a stack even when it does not fit
        groups = _stack_groups(fleet, reserved_gib)
        cloud = fleet.spec.cloud
    else:
        if not model or not (gpu or custom):
            raise UserError(
                [
                    Problem(
                        "--model / --gpu",
                        "",
                        "give --model and --gpu (or --gpu-memory-gib with --compute-capability, or --stack NAME)",
                    )
                ]
            )
        problems = _choice_problems(
            [
                ("--gpu", gpu, gpu_kinds()),
                ("--dtype", dtype, _serving_choices("dtype")),
                ("--quantization", quantization, fit.formats()),
                ("--kv-cache-dtype", kv_cache_dtype, profiler.known_kv_dtypes()),
            ]
        )
        if custom:
            problems += _custom_gpu_problems(gpu_memory_gib, compute_capability)
        if vllm_version is not None:
            vllm_version = profiler.as_release(vllm_version)
        if vllm_version is not None and (why := profiler.version_problem(vllm_version)):
            problems.append(Problem("--vllm-version", "", why))
        if max_loras == 0 and "--max-lora-rank" in options.given(ctx):  # no LoRA slot: the rank was ignored
            problems.append(Problem("--max-lora-rank", "", "give --max-loras N too (LoRA is off without it)"))
        if problems:
            raise UserError(problems)
        arch = models.resolve(model)
        if arch.weight_bytes_given is not None and quantization not in (None, "gguf"):
            raise UserError(
                [
                    Problem(
                        "--quantization",
                        "",
                        f"{model} is a GGUF file: its weights are in the file's own formats; drop --quantization",
                    )
                ]
            )
        if hf_config_path is not None and arch.gguf_architecture is None:
            raise UserError(
                [Problem("--hf-config-path", "", f"{model} is not a .gguf file: give --hf-config-path only with one")]
            )
        if quantization is None and arch.weight_bytes_given is not None:
            quantization = "gguf"
        gpu_kind: fit.Gpu | GpuKind
        if custom:
            assert gpu_memory_gib is not None and compute_capability is not None  # else _custom_gpu_problems raised
            gpu_kind = fit.custom_gpu(gpu_memory_gib, compute_capability)
        else:
            assert gpu is not None  # checked above: --gpu unless custom
            gpu_kind = gpu_kinds()[gpu]
        usable = fit.as_gpu(gpu_kind).memory_gib
        if reserved_gib >= usable:  # no memory left for vLLM at all: a typo, not a sizing question
            raise UserError(
                [
                    Problem(
                        "--reserved-gib",
                        "",
                        f"{reserved_gib:g} GiB is all of one GPU's {usable:g} GiB: give what other processes hold",
                    )
                ]
            )
        serving = fit.Serving(
            gpus=gpus,
            dtype=dtype,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
            gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=enforce_eager,
            cpu_offload_gb=cpu_offload_gb,
            vllm_version=vllm_version,
            reserved_gib=reserved_gib,
            pipeline_parallel=pipeline_parallel,
            data_parallel=data_parallel,
            expert_parallel=expert_parallel,
            max_loras=max_loras,
            max_lora_rank=max_lora_rank,
            hf_config_path=hf_config_path,
        )
        groups = [SizedGroup(arch, gpu_kind, serving)]
    if cloud and (problems := _choice_problems([("--cloud", cloud, clouds())])):  # the registry only when asked
        raise UserError(problems)
    sold = checks.sold_sizes(cloud) if cloud else None
    fits = [(g, fit.fit(g.arch, g.gpu, g.serving, gpu_kinds(), sold)) for g in groups]
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: _fit_json(fits)),
        table=renderers.Draw(lambda c: _print_fits(fits, c)),
    )
    # a problem at the model's central estimate ("does not fit", or "tight" on the short side), of any group sized
    if not all(r.fits for _, r in fits):
        raise typer.Exit(1)


class SizedGroup(NamedTuple):
    """One serving group `plan fit` sizes: its model, GPU and serving parameters; with --stack its group name (the
    program's <name>[-<label>]-<environment>) and, for a rollout's candidate group, the candidate's label."""

    arch: ModelArch
    gpu: fit.Gpu | GpuKind
    serving: fit.Serving
    group: str | None = None
    candidate_label: str | None = None


def _stack_groups(fleet: Fleet, reserved_gib: float) -> list[SizedGroup]:
    """What `plan fit --stack` sizes: the fleet's serving group and, with a rollout, the candidate group (the fleet it
    becomes, as `preview` sizes it); the problems of both at once, each at the stack file's field it comes from."""
    from gpufleet.files import package_file
    from gpufleet.sizing import checks, models
    from gpufleet.stacks.loader import candidate_field

    out: list[SizedGroup] = []
    problems: list[Problem] = []
    for group, field in ((fleet, str), (fleet.candidate, candidate_field)):
        if group is None:
            continue
        spec = group.spec
        name = spec.model.catalog or spec.model.name
        try:
            arch = models.resolve(name)
        except UserError:  # said as the stack's field, not as --model (which --stack refuses)
            arch = None
            problems.append(
                Problem(
                    fleet.file,
                    field("fleet.model.catalog" if spec.model.catalog else "fleet.model.name"),
                    f"{name!r} is not in the sizing catalog ({package_file(models.CATALOG)})"
                    + did_you_mean(name, models.catalog())
                    + ": set model.catalog to the entry it is sized as, or size it with `gpufleet plan fit --model "
                    "CONFIG.json --gpu GPU` (its config.json)",
                )
            )
        bad = checks.extra_args_problems(spec)
        problems += [Problem(fleet.file, field(path), message) for path, message in bad]
        if arch is not None and not bad:
            serving = replace(checks.serving_of(spec), reserved_gib=reserved_gib)
            label = spec.label if group is fleet.candidate else None
            out.append(SizedGroup(arch, group.gpu, serving, group.group_prefix, label))
    if problems:
        raise UserError(problems)
    return out


def _fit_json(fits: list[tuple[SizedGroup, fit.Fit]]) -> dict:
    """The fleet's serving group's fit (the keys `plan fit` always had) and, with a rollout, the candidate group's
    under `candidate`, the same keys with its group name and label first."""
    (_, r), *rest = fits
    out = r.to_json()
    for g, rc in rest:
        out["candidate"] = {"group": g.group, "label": g.candidate_label, **rc.to_json()}
    return out


def _print_fits(fits: list[tuple[SizedGroup, fit.Fit]], c) -> None:
    """One table per group; two groups (a rollout) each say which group they size."""
    for g, r in fits:
        if len(fits) == 1:
            named = None
        elif g.candidate_label is None:
            named = f"current group {g.group}"
        else:
            named = f"rollout candidate {g.group} (rollout.candidate, label {g.candidate_label})"
        _print_fit(r, g.arch.name, c, named)


def _custom_gpu_problems(memory_gib: float | None, cc: str | None) -> list[Problem]:
    """A GPU the catalog lacks needs both its memory and its compute capability (each alone is a UserError)."""
    out = []
    if memory_gib is None:
        out.append(
            Problem("--gpu-memory-gib", "", "required with --compute-capability: one GPU's total memory in GiB, e.g. 23.58")
        )
    elif not 1 <= memory_gib <= 1024:
        out.append(Problem("--gpu-memory-gib", "", "give one GPU's total memory in GiB (1-1024), e.g. 23.58 for a 24 GB card"))
    parts = (cc or "").split(".")
    if cc is None:
        out.append(
            Problem(
                "--compute-capability",
                "",
                "required with --gpu-memory-gib: the GPU's compute capability M.m, e.g. 8.6 "
                "(nvidia-smi --query-gpu=compute_cap --format=csv)",
            )
        )
    elif len(parts) != 2 or not all(p.isdigit() for p in parts) or not 7 <= int(parts[0]) <= 12:
        out.append(
            Problem("--compute-capability", "", f"{cc!r} is not M.m between 7.0 and 12.x (e.g. 8.6), as vLLM runs on CUDA")
        )
    return out


def _print_fit(r, model_name: str, c, group: str | None = None) -> None:
    from rich.table import Table  # imported when a table is printed (rich's table costs import time)
    from rich.text import Text

    t = Table(
        title=(f"{group}: " if group else "")
        + f"{model_name} on {r.gpus * r.pipeline_parallel * r.data_parallel}x {r.gpu} (TP {r.gpus}"
        + (f", PP {r.pipeline_parallel}" if r.pipeline_parallel > 1 else "")
        + (f", DP {r.data_parallel}" if r.data_parallel > 1 else "")
        + (", EP" if r.expert_parallel else "")
        + f"), {r.dtype}"
        + (f", {r.quantization}" if r.quantization else "")
        + f", vLLM {r.vllm_version} ({r.engine}), per GPU"
    )
    for col in ("term", "GiB", "estimate", "source"):
        # a number or a term name is never cut; a long source folds onto more lines rather than losing its end
        t.add_column(col, justify="right" if col == "GiB" else "left", no_wrap=col in ("term", "GiB"), overflow="fold")
    for term in r.terms:
        t.add_row(term.name, f"{term.gib:.2f}", "yes" if term.estimate else "", term.source)
    c.print(t)
    c.print(
        f"KV cache: {r.kv_tokens} tokens ({r.kv_bytes_per_token} B/token per GPU); "
        f"{r.max_concurrency:.2f}x concurrency at max_model_len {r.max_model_len}"
    )
    c.print(
        f"KV tokens within the model's error: {r.kv_tokens_range[0]}-{r.kv_tokens_range[1]}"
        + (" per replica" if r.data_parallel > 1 else "")
    )
    c.print(Text(r.verdict, {"fits": "green", "tight": "yellow"}.get(r.verdict, "red")))
    for p in r.problems:
        c.print(f"  problem: {p}")
    for a in r.advice:
        c.print(f"  advice: {a}")
    for a in r.assumptions:
        c.print(f"  assumption: {a}")


@plan_app.command("capacity")
def capacity_cmd(
    peak_qps: float = options.real(..., "--peak-qps", help="requests per second at the busiest time"),
    qps_per_node: float | None = options.real(None, "--qps-per-node", help="requests per second one node sustains"),
    from_loadtest: Path | None = typer.Option(
        None, "--from-loadtest", parser=options.path, help="a result file written by `gpufleet loadtest --save-json FILE`"
    ),
    redundancy: int = typer.Option(1, "--redundancy", help="spare nodes above the peak (N+K)"),
    stack: str | None = options.stack(
        required=False,
        help="check this stack's replicas and schedules against the plan (exit 1 when below); name or path",
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Nodes = ceil(peak / per-node QPS) + redundancy, as autoscaling min / max / desired. With --stack, exit 1 when
    the stack's replicas, or the min or max a schedule sets while it holds, are below the plan; and a warning when
    --from-loadtest was measured on another node, GPU, model or serving flags than the stack's.

    \b
    Examples:
      gpufleet plan capacity --peak-qps 40 --qps-per-node 6
      gpufleet plan capacity --peak-qps 15 --qps-per-node 6 --stack alicloud-cn-hangzhou-prod
      gpufleet plan capacity --peak-qps 40 --from-loadtest lt.json --json
    """
    from gpufleet import clock
    from gpufleet.inputs import read_json_object
    from gpufleet.sizing import capacity

    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [stack], from_loadtest))
    if (qps_per_node is None) == (from_loadtest is None):
        raise UserError([Problem("--qps-per-node / --from-loadtest", "", "give exactly one")])
    result = None
    if from_loadtest is not None:
        result = read_json_object(from_loadtest, "write one with `gpufleet loadtest ... --save-json FILE`")
        per_node, source = capacity.per_node_qps_of(result, str(from_loadtest))
    else:
        assert qps_per_node is not None  # exactly one of the two, checked above
        per_node, source = qps_per_node, "given"
    p = capacity.plan(peak_qps, per_node, redundancy, source)
    measured: list[str] = []
    short: list[str] = []
    if stack:
        from gpufleet.sizing.loadtest import measured_elsewhere
        from gpufleet.validation import load_fleet

        fleet = load_fleet(stack)
        if result is not None:  # as `cost tokens` and `plan scaling` warn: the T4 stack was planned at the A10 knee
            measured = measured_elsewhere(result, str(from_loadtest), fleet, f"the plan sizes {fleet.stack}'s replicas at")
        # a schedule's min and max replace the replicas' while it holds: a night max of 4 caps a plan of 6
        problems = capacity.replicas_problems(fleet.spec.replicas, p)
        problems += capacity.schedule_problems(fleet.spec.autoscaling, p, clock.now())
        short = [f"{stack}: {f}: {m}" for f, m in problems]

    def draw(c) -> None:
        from rich.text import Text

        c.print(f"{p.nodes} nodes for {p.peak_qps:g} QPS at {p.qps_per_node:g} QPS per node ({p.qps_source}), N+{p.redundancy}")
        c.print(f"  replicas: min {p.min_replicas}, max {p.max_replicas}, desired at peak {p.desired}")
        for w in measured:
            c.print(Text.assemble(("warning", "yellow"), f" {w}"))
        for w in short:
            c.print(Text.assemble(("short", "red"), f" {w}"))

    renderers.render(
        chosen,
        output,
        # warnings: every line the table prints after the plan; short: the ones exit 1 is for
        json=renderers.Json(lambda: {**p.to_json(), "warnings": [*measured, *short], "short": short}),
        table=renderers.Draw(draw),
    )
    if short:  # a check failed: the stack cannot scale to the plan
        raise typer.Exit(1)


SCALING_FORMATS = ("table", "json", "html")


@plan_app.command("scaling")
def scaling_cmd(
    stack: str = options.stack(help="the stack whose declared scaling is simulated (name or Pulumi.<name>.yaml path)"),
    trace_file: Path | None = typer.Option(
        None,
        "--trace",
        parser=options.path,
        help="CSV (header: time,requests_per_s[,prompt_tokens,output_tokens]) or JSON rows; time ISO 8601 with a zone or seconds",
    ),
    profile: str | None = typer.Option(
        None, "--profile", help="without --trace: day (a business day, the default), step (5x for an hour) or spike"
    ),
    from_loadtest: Path | None = typer.Option(
        None, "--from-loadtest", parser=options.path, help="per-node capacity: the knee of `gpufleet loadtest --save-json FILE`"
    ),
    qps_per_node: float | None = options.real(
        None, "--qps-per-node", help="per-node capacity as plan capacity takes it (instead of --from-loadtest)"
    ),
    slo_ttft_ms: float | None = options.real(
        None,
        "--slo-ttft-ms",
        help="TTFT objective to check (exit 1 when missed); default: the load test's p95 SLO, reported only",
    ),
    reclaim_per_hour: float = options.real(
        0.0,
        "--reclaim-per-hour",
        help="spot reclaims per hour, evenly spread: 0 to 360 (at most one every 10 s, the built-in profiles' step)",
    ),
    reclaim_at: str | None = typer.Option(
        None, "--reclaim-at", help="spot reclaims at these seconds from the start, comma-separated, before the trace's end"
    ),
    start: str | None = typer.Option(
        None,
        "--start",
        help="start of the profile or of a trace timed in seconds, ISO 8601 with a zone, read as the same instant in UTC (default: the next whole hour)",
    ),
    fmt: str = options.fmt(SCALING_FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Simulate the fleet the stack declares (its groups, alarms or scaler, hooks, schedules, spot) through a traffic
    trace: nodes by state, queue, p95 wait and TTFT estimate per step; time to the peak's nodes, seconds over the SLO,
    scale events, node-hours and the cost of the trace from the catalog's prices. Exit 1 when --slo-ttft-ms is given
    and the trace misses it.

    \b
    Examples:
      gpufleet plan scaling --stack alicloud-cn-hangzhou-prod --from-loadtest examples/loadtest-example.json
      gpufleet plan scaling --stack tencentcloud-ap-guangzhou-prod --qps-per-node 13.8 --profile step --format json
      gpufleet plan scaling --stack alicloud-cn-hangzhou-prod --qps-per-node 13.8 --profile step --format html -o day.html
    """
    from datetime import datetime

    from gpufleet.inputs import number_problems
    from gpufleet.simulate import capacity, report, run, trace

    chosen = options.chosen_format(
        fmt, as_json, SCALING_FORMATS, output, options.inputs(output, [stack], trace_file, from_loadtest)
    )
    problems = _choice_problems([("--profile", profile, trace.PROFILES)])
    if profile is not None and trace_file is not None:  # the trace is the traffic: the profile was ignored
        problems.append(Problem("--profile", "", "not used with --trace (the trace is the traffic): give one of them"))
    profile = profile or "day"
    if (qps_per_node is None) == (from_loadtest is None):
        problems.append(Problem("--qps-per-node / --from-loadtest", "", "give exactly one (what one node serves)"))
    problems += number_problems(reclaim_per_hour, "--reclaim-per-hour", "", 0, trace.MAX_RECLAIMS_PER_HOUR)
    at: list[float] = []
    for part in filter(None, (reclaim_at or "").split(",")):
        try:
            at.append(float(part))
        except ValueError:
            problems.append(Problem("--reclaim-at", "", f"{part!r} is not a number of seconds"))
        else:
            problems += number_problems(at[-1], "--reclaim-at", "", 0, trace.MAX_SPAN_S)
    if reclaim_at is not None and not at and not any(p.file == "--reclaim-at" for p in problems):
        problems.append(Problem("--reclaim-at", "", f"{reclaim_at!r} names no time: give seconds from the start, e.g. 3600,7200"))
    when = None
    if start:
        try:
            when = datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            problems.append(Problem("--start", "", f"{start!r}: give ISO 8601 with a zone, e.g. 2026-12-07T09:00:00+08:00"))
        else:
            problems += trace.span_problems(when, trace.MAX_SPAN_S, "--start", "")
    if slo_ttft_ms is not None and not slo_ttft_ms > 0:
        problems.append(Problem("--slo-ttft-ms", "", "must be above 0"))
    if problems:
        raise UserError(problems)
    slo = slo_ttft_ms
    stack_name = options.resolve_stack(stack) or stack
    measured: list[str] = []
    if from_loadtest is not None:
        from gpufleet.inputs import read_json_object
        from gpufleet.sizing.loadtest import measured_elsewhere
        from gpufleet.validation import load_fleet

        result = read_json_object(from_loadtest, "write one with `gpufleet loadtest ... --save-json FILE`")
        cap = capacity.from_loadtest_result(result, str(from_loadtest))
        if slo is None:
            got = result.get("slo_p95_ms")
            slo = float(got) if isinstance(got, (int, float)) else None
        # as `cost tokens` warns: the T4 stack was simulated at the A10 knee without a word
        measured = measured_elsewhere(
            result, str(from_loadtest), load_fleet(stack_name, sizing=False), f"the simulation runs {stack_name}'s nodes at"
        )
    else:
        assert qps_per_node is not None
        cap = capacity.given(qps_per_node, "given (--qps-per-node)")
    doc = run.for_stack(
        stack_name,
        cap,
        trace_file,
        profile,
        slo,
        tuple(at),
        reclaim_per_hour,
        when,
        warnings=tuple(measured),
        say=lambda line: console(stderr=True, soft_wrap=True).print(line),
    )
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: doc, indent=1),
        html=renderers.Text(lambda: report.chart_html(doc)),
        table=renderers.Draw(lambda c: report.table(doc, c)),
    )
    if slo_ttft_ms is not None and doc["summary"]["seconds_over_slo"]:  # the objective the user asked to check
        raise typer.Exit(1)
