"""`gpufleet plan fit` (does the model fit the GPU) and `gpufleet plan capacity` (how many nodes a peak needs)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from gpufleet.errors import Problem, UserError, did_you_mean

plan_app = typer.Typer(
    rich_markup_mode=None, no_args_is_help=True, help="Sizing before anything is paid for: memory fit and node count."
)


def register(app: typer.Typer) -> None:
    app.add_typer(plan_app, name="plan")


def _serving_choices(field: str) -> tuple[str, ...]:
    """The values the stack spec accepts for a Literal serving field (one list for the spec and this command)."""
    import typing

    from gpufleet.stacks import choices

    return typing.get_args({"dtype": choices.Dtype, "kv_cache_dtype": choices.KvCacheDtype}[field])


def _choice_problems(checks: list[tuple[str, str | None, object]]) -> list[Problem]:
    """A problem for each (flag, value, choices) whose value is given and not one of the choices."""
    return [
        Problem(flag, "", f"unknown {value!r}" + did_you_mean(value, choices))
        for flag, value, choices in checks
        if value is not None and value not in choices
    ]


@plan_app.command("fit")
def fit_cmd(
    model: str | None = typer.Option(None, "--model", help="catalog name (sizing/data/models.yaml) or path of a config.json"),
    gpu: str | None = typer.Option(None, "--gpu", help="T4, A10, V100-16G, V100-32G, A100-40G, A100-80G"),
    gpus: int = typer.Option(1, "--gpus", min=1, max=8, help="tensor-parallel size"),
    dtype: str = typer.Option("auto", "--dtype"),
    quantization: str | None = typer.Option(None, "--quantization", help="awq, gptq, int8, fp8, bitsandbytes"),
    kv_cache_dtype: str = typer.Option("auto", "--kv-cache-dtype"),
    max_model_len: int = typer.Option(8192, "--max-model-len", min=1),
    max_num_seqs: int = typer.Option(64, "--max-num-seqs", min=1),
    max_num_batched_tokens: int = typer.Option(8192, "--max-num-batched-tokens", min=1),
    gpu_memory_utilization: float = typer.Option(0.90, "--gpu-memory-utilization", min=0.05, max=0.99),
    cloud: str | None = typer.Option(None, "--cloud", help="advise only node sizes this cloud sells (alicloud, tencentcloud)"),
    stack: str | None = typer.Option(None, "--stack", help="take model, GPU, serving parameters and cloud from a stack"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Weights, KV cache and overhead against GPU memory; fits or not, and what to change."""
    from gpufleet.sizing import checks, fit, models
    from gpufleet.stacks.catalog import CLOUDS, gpu_kinds

    if stack:
        from gpufleet.stacks.loader import load_fleet

        fleet = load_fleet(stack, sizing=False)  # plan a stack even when it does not fit
        arch = models.resolve(fleet.spec.model.catalog or fleet.spec.model.name)
        gpu_kind, serving = fleet.gpu, checks.serving_of(fleet.spec)
        cloud = fleet.spec.cloud
    else:
        if not model or not gpu:
            raise UserError([Problem("--model / --gpu", "", "give both (or --stack NAME)")])
        if problems := _choice_problems(
            [
                ("--gpu", gpu, gpu_kinds()),
                ("--dtype", dtype, _serving_choices("dtype")),
                ("--quantization", quantization, fit.formats()),
                ("--kv-cache-dtype", kv_cache_dtype, _serving_choices("kv_cache_dtype")),
            ]
        ):
            raise UserError(problems)
        arch, gpu_kind = models.resolve(model), gpu_kinds()[gpu]
        serving = fit.Serving(
            gpus=gpus,
            dtype=dtype,
            quantization=quantization,
            kv_cache_dtype=kv_cache_dtype,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=max_num_batched_tokens,
            gpu_memory_utilization=gpu_memory_utilization,
        )
    if problems := _choice_problems([("--cloud", cloud, CLOUDS)]):
        raise UserError(problems)
    r = fit.fit(arch, gpu_kind, serving, gpu_kinds(), checks.sold_sizes(cloud) if cloud else None)
    if as_json:
        typer.echo(json.dumps(r.to_json(), indent=2))
    else:
        c = Console()
        from rich.table import Table

        t = Table(
            title=f"{arch.name} on {serving.gpus}x {gpu_kind.name} ({gpu_kind.memory_gib} GiB), {r.dtype}"
            + (f", {r.quantization}" if r.quantization else "")
        )
        for col in (
            "budget GiB",
            "weights GiB",
            "overhead GiB",
            "KV cache GiB",
            "KV B/token",
            "KV tokens",
            f"seqs of {r.max_model_len}",
        ):
            t.add_column(col, justify="right")
        t.add_row(
            f"{r.budget_gib:.2f}",
            f"{r.weights_gib:.2f}",
            f"{r.overhead_gib:.2f}",
            f"{r.kv_cache_gib:.2f}",
            str(r.kv_bytes_per_token),
            str(r.kv_tokens),
            str(r.max_concurrent_seqs),
        )
        c.print(t)
        c.print("[green]fits[/green]" if r.fits else "[red]does not fit[/red]")
        for p in r.problems:
            c.print(f"  problem: {p}")
        for a in r.advice:
            c.print(f"  advice: {a}")
        for a in r.assumptions:
            c.print(f"  assumption: {a}")
    if not r.fits:
        raise typer.Exit(1)


@plan_app.command("capacity")
def capacity_cmd(
    peak_qps: float = typer.Option(..., "--peak-qps", help="requests per second at the busiest time"),
    qps_per_node: float | None = typer.Option(None, "--qps-per-node", help="requests per second one node sustains"),
    from_loadtest: Path | None = typer.Option(
        None, "--from-loadtest", help="a result file written by `gpufleet loadtest -o FILE`"
    ),
    redundancy: int = typer.Option(1, "--redundancy", help="spare nodes above the peak (N+K)"),
    stack: str | None = typer.Option(None, "--stack", help="warn when this stack's replicas are below the plan"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Nodes = ceil(peak / per-node QPS) + redundancy, as autoscaling min / max / desired."""
    from gpufleet.sizing import capacity

    if (qps_per_node is None) == (from_loadtest is None):
        raise UserError([Problem("--qps-per-node / --from-loadtest", "", "give exactly one")])
    if from_loadtest is not None:
        per_node, source = capacity.per_node_qps(from_loadtest)
    else:
        per_node, source = qps_per_node, "given"
    p = capacity.plan(peak_qps, per_node, redundancy, source)
    warnings = []
    if stack:
        from gpufleet.stacks.loader import load_fleet

        warnings = [f"{stack}: {f}: {m}" for f, m in capacity.replicas_problems(load_fleet(stack).spec.replicas, p)]
    if as_json:
        typer.echo(json.dumps({**p.to_json(), "warnings": warnings}, indent=2))
    else:
        c = Console()
        c.print(f"{p.nodes} nodes for {p.peak_qps:g} QPS at {p.qps_per_node:g} QPS per node ({p.qps_source}), N+{p.redundancy}")
        c.print(f"  replicas: min {p.min_replicas}, max {p.max_replicas}, desired at peak {p.desired}")
        for w in warnings:
            c.print(f"[yellow]warning[/yellow] {w}")
