"""Render a new stack for a cloud, region and environment from stacks/templates/, checked before writing.

Pure functions pick the region facts (zones selling the GPU, instance type, image recipe, a VPC /16 that
overlaps no stack of the same cloud); `plan` renders and validates with loader.validate; `write` refuses
to overwrite. Every bad input is a UserError and nothing is written.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml
from gpufleet.components.registry import profile
from gpufleet.stacks import catalog, loader

from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.yamlload import load_file, loads

TEMPLATES = Path(__file__).parent / "templates"
RECIPES = Path(__file__).resolve().parent.parent / "images" / "recipes"
ENVIRONMENTS = ("dev", "staging", "prod")
CIDR_POOL = ipaddress.ip_network("10.0.0.0/8")
ARG = "arguments"


@dataclass(frozen=True)
class Plan:
    stack: str
    path: Path
    text: str
    reasons: tuple[str, ...]


def defaults(env: str) -> dict:
    return load_file(TEMPLATES / "defaults.yaml")[env]


def pick_zones(cloud: str, region: str, gpu: str, count: int, env: str, wanted: list[str] | None = None) -> list[str]:
    regions = catalog.regions(cloud)
    zones = regions[region]
    selling = [z for z in sorted(zones) if gpu in zones[z]]
    if not selling:
        raise UserError(
            [
                Problem(
                    ARG,
                    "--gpu",
                    f"{cloud} sells no {gpu} in {region}; regions that do: "
                    f"{', '.join(catalog.regions_selling(cloud, gpu)) or 'none'}",
                )
            ]
        )
    if wanted:
        problems = []
        for z in wanted:
            if z not in zones:
                problems.append(Problem(ARG, "--zone", f"{z!r} is not a zone of {region}" + did_you_mean(z, zones)))
            elif z not in selling:
                problems.append(
                    Problem(ARG, "--zone", f"{z} does not sell {gpu} (zones of {region} that do: {', '.join(selling)})")
                )
        if problems:
            raise UserError(problems)
        chosen = list(wanted)
    else:
        chosen = selling[:count]
    if env == "prod" and len(chosen) < 2:
        raise UserError(
            [
                Problem(
                    ARG,
                    "--env",
                    f"prod needs at least 2 zones selling {gpu} in {region}; "
                    f"{region} has {len(chosen)} ({', '.join(chosen) or 'none'}); pick another --gpu or region",
                )
            ]
        )
    return chosen


def existing_cidrs(cloud: str, root: Path) -> dict[str, ipaddress.IPv4Network]:
    """stack -> VPC CIDR of every stacks/Pulumi.*.yaml of that cloud (spec default if unset)."""
    out = {}
    for stack in loader.stack_names(root):
        _, config = loader.read_stack_config(stack, root)
        fleet = config.get(loader.CONFIG_KEY) or {}
        if fleet.get("cloud") == cloud:
            out[stack] = ipaddress.ip_network((fleet.get("network") or {}).get("vpc_cidr", "10.20.0.0/16"))
    return out


def allocate_cidr(taken: dict[str, ipaddress.IPv4Network], wanted: str | None = None) -> str:
    if wanted:
        net = ipaddress.ip_network(wanted, strict=False)
        clash = sorted(s for s, n in taken.items() if n.overlaps(net))
        if clash:
            free = allocate_cidr(taken)
            raise UserError([Problem(ARG, "--cidr", f"{wanted} overlaps the VPC of {', '.join(clash)}; a free /16 is {free}")])
        return str(net)
    for net in CIDR_POOL.subnets(new_prefix=16):
        if not any(net.overlaps(t) for t in taken.values()):
            return str(net)
    raise UserError([Problem(ARG, "--cidr", "no free /16 left in 10.0.0.0/8 for this cloud")])


def recipe_for(gpu: str) -> str:
    for path in sorted(RECIPES.glob("*.yaml")):
        doc = load_file(path)
        if gpu in doc.get("gpus", []):
            return doc["name"]
    raise UserError([Problem(ARG, "--gpu", f"no image recipe in images/recipes/ supports {gpu}")])


def check_image(recipe: str, cloud: str, region: str) -> None:
    from gpufleet.images.lock import image_for

    ref = image_for(recipe, cloud, region)
    if isinstance(ref, str):
        raise UserError([Problem("images/lock.json", f"{recipe}.{cloud}.{region}", ref)])


def render(template: str, **values) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    try:
        return env.get_template(template).render(**values)
    except jinja2.TemplateNotFound:
        known = [p.name for p in TEMPLATES.glob("*.j2")]
        raise UserError(
            [Problem(ARG, "--from", f"no template {template!r} in stacks/templates/" + did_you_mean(template, known))]
        ) from None


def plan(
    cloud: str,
    region: str,
    env: str,
    gpu: str | None = None,
    template: str = "stack.yaml.j2",
    name: str | None = None,
    zones: list[str] | None = None,
    cidr: str | None = None,
    root: Path | None = None,
) -> Plan:
    root = root or loader.project_root()
    if cloud not in catalog.clouds():
        raise UserError([Problem(ARG, "--cloud", f"unknown cloud {cloud!r}" + did_you_mean(cloud, catalog.clouds()))])
    regions = catalog.regions(cloud)
    if region not in regions:
        raise UserError([Problem(ARG, "--region", f"unknown {cloud} region {region!r}" + did_you_mean(region, regions))])
    if env not in ENVIRONMENTS:
        raise UserError([Problem(ARG, "--env", f"unknown environment {env!r}" + did_you_mean(env, ENVIRONMENTS))])
    d = defaults(env)
    gpu = gpu or d["gpu"]
    if gpu not in catalog.gpu_kinds():
        raise UserError([Problem(ARG, "--gpu", f"unknown GPU kind {gpu!r}" + did_you_mean(gpu, catalog.gpu_kinds()))])
    stack = name or f"{cloud}-{region}-{env}"
    path = loader.stack_path(stack, root)
    chosen = pick_zones(cloud, region, gpu, d["zones"], env, zones)
    itype = catalog.default_instance_type(cloud, gpu, 1)
    if itype is None:
        raise UserError([Problem(ARG, "--gpu", f"{cloud} has no single-{gpu} instance type in the catalog")])
    taken = {s: n for s, n in existing_cidrs(cloud, root).items() if s != stack}
    vpc = allocate_cidr(taken, cidr)
    recipe = recipe_for(gpu)
    check_image(recipe, cloud, region)
    selling = [z for z in sorted(regions[region]) if gpu in regions[region][z]]
    reasons = (
        f"zones {', '.join(chosen)}: {env} wants {d['zones']}; zones of {region} selling {gpu}: {', '.join(selling)}",
        f"instance type {itype.type}: the catalog's default size for 1x {gpu} ({itype.vcpu} vCPU, {itype.memory_gib} GiB)",
        f"image recipe {recipe}: supports {gpu}; locked for {cloud} {region} in images/lock.json",
        f"VPC {vpc}: first free /16 of 10.0.0.0/8 next to {cloud} stacks "
        + (", ".join(f"{s} {n}" for s, n in sorted(taken.items())) or "(none)")
        if not cidr
        else f"VPC {vpc}: as asked, overlaps no {cloud} stack",
        f"replicas {d['replicas']['min']}-{d['replicas']['max']}, billing {d['billing']}, alarms to {d['alarms']['contact_group']}: {env} defaults (stacks/templates/defaults.yaml)",
        f"model {d['model']['name']}: {env} default; its sha256 is an example value, replace it with `sha256sum` of your archive before `pulumi up`",
    )
    text = render(
        template,
        cloud=cloud,
        region=region,
        env=env,
        name="llm",
        gpu=gpu,
        zones=chosen,
        instance_type=itype.type,
        recipe=recipe,
        vpc_cidr=vpc,
        scheme=profile(cloud).object_scheme,
        d=d,
        why=f"zones selling {gpu}, {itype.type}, recipe {recipe}, VPC {vpc}",
    )
    shown = f"stacks/{path.name}"
    try:
        raw = loads(text)["config"][loader.CONFIG_KEY]
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise UserError([Problem(shown, "", f"template {template} did not render a stack file: {exc}")]) from None
    loader.validate(raw, stack=stack, file=shown)
    return Plan(stack=stack, path=path, text=text, reasons=reasons)


def write(p: Plan) -> Path:
    if p.path.exists():
        raise UserError(
            [
                Problem(
                    f"stacks/{p.path.name}",
                    "",
                    "already exists; not overwriting it (pass --name for another stack, or edit the file)",
                )
            ]
        )
    with p.path.open("x") as fh:
        fh.write(p.text)
    return p.path
