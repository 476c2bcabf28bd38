"""The image pipeline as Pulumi resources (each cloud's builder is its image module, components/<cloud>/image.py):
builder instance + temporary security group (SSH from the
operator CIDR only), the image made from the builder, its copies to the recipe's other regions, all
tagged with the recipe's pins.

It runs in three phases of one images stack, so that Pulumi itself removes the builder:
- "build":   builder + security group (then `gpufleet image build --host <builder ip> ...` runs the steps);
- "image":   the same + the image from the builder + the copies (after a successful build);
- "done":    only the image and the copies: the builder and its security group are deleted by Pulumi.
In "done" the image keeps the builder's instance id as recorded in "image" (`builder_instance_id`).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

import pulumi
from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpufleet import inputs, registry
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import package_file
from gpufleet.images.recipes import Sha256, load_recipe, name_problem, recipe_names
from gpufleet.stacks import catalog
from gpufleet.stacks.loader import read_config
from gpufleet.stacks.project import PROGRAM_DIR, first, found_in, listed, project_first, recipe_folders, shown_folders

Phase = Literal["build", "image", "done"]


class BuilderSpec(Struct, frozen=True):
    """Where the builder runs; every value comes from the images stack config, none is chosen here."""

    cloud: str
    region: str
    zone: str
    instance_type: str
    vpc_id: str
    subnet_id: str
    base_image_id: str  # the recipe's base_image pattern resolved to an id (DescribeImages) by the caller
    operator_cidr: str
    system_disk_gib: int
    key_name: str


def tags(recipe, manifest_sha256: str | None) -> dict[str, str]:
    out = {"gpufleet:recipe": recipe.name, **{f"gpufleet:{k}": v for k, v in sorted(recipe.pins.items())}}
    if manifest_sha256:
        out["gpufleet:manifest-sha256"] = manifest_sha256
    return out


def cidr_problem(cidr: str) -> str | None:
    """Why `cidr` may not be the builder's SSH source, or None."""

    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return f"{cidr!r} is not a CIDR, e.g. 198.51.100.7/32"
    if net.version != 4:  # the builder's SSH rule is IPv4 (alicloud cidr_ip); and a /16 of IPv6 is 2^112 addresses
        return f"operator_cidr {cidr} is IPv6: the builder's SSH rule takes an IPv4 CIDR, e.g. 198.51.100.7/32"
    if net.network_address != ipaddress.ip_interface(cidr).ip:
        return f"operator_cidr {cidr} has host bits set: use {net} or {cidr.split('/')[0]}/32"
    if net.prefixlen < 16:
        return f"operator_cidr {cidr} is wider than /16; SSH to the builder is for the operator only"
    return None


def declare(
    recipe, spec: BuilderSpec, phase: Phase, manifest_sha256: str | None = None, builder_instance_id: str | None = None
) -> dict[str, pulumi.Output]:
    problem = cidr_problem(spec.operator_cidr)
    if problem:
        raise ValueError(problem)

    out = registry.module(spec.cloud, "image").declare(recipe, spec, phase, manifest_sha256, builder_instance_id)
    if phase in ("image", "done") and manifest_sha256:  # `image lock record --outputs` compares it with its --manifest
        out = {**out, "manifest_sha256": pulumi.Output.from_input(manifest_sha256)}
    return out


# --- the images stack: one stack file per recipe and source region ------------------------------------
# The images program is the project's images/program/ (`gpufleet init` writes its Pulumi.yaml and __main__.py; the
# user's stack files go there); the package ships example stack files only (with the other example inputs,
# gpufleet/examples/, which `init --examples` copies), previewed by name from anywhere.
EXAMPLES = Path(__file__).parent.parent / "examples" / "images"


def program_folders() -> tuple[Path, ...]:
    """Where an images stack is looked up by name, in order: the project's images/program/ (PROGRAM_DIR, when in a
    project), then the package's examples (project.project_first, the lookup recipes use too)."""
    return project_first(PROGRAM_DIR, EXAMPLES, "the images program and its Pulumi.<name>.yaml stack files")


def stack_names(folders: tuple[Path, ...] | None = None) -> list[str]:
    """The images stacks of `folders` (default: program_folders()): their Pulumi.<name>.yaml, not the project file
    Pulumi.yaml."""
    return list(listed(folders or program_folders(), "Pulumi.", ".yaml"))


def stack_file(name: str, folders: tuple[Path, ...] | None = None) -> Path:
    """The stack file of an images stack name: the first of `folders` (default: program_folders()) that holds
    Pulumi.<name>.yaml; when none does, the first folder's (the project's, where the user's stack would be)."""
    folders = folders or program_folders()
    return first(folders, f"Pulumi.{name}.yaml", "the stack file") or folders[0] / f"Pulumi.{name}.yaml"


CONFIG_KEY = "gpufleet-images:pipeline"


class _Builder(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    cloud: str
    region: str

    @field_validator("cloud")
    @classmethod
    def _registered(cls, cloud: str) -> str:
        if why := registry.unknown(cloud):
            raise ValueError(why)
        return cloud

    zone: str
    instance_type: str
    vpc_id: str
    subnet_id: str
    base_image_id: str = Field(description="an id matching the recipe's base_image pattern for this cloud")
    operator_cidr: str = Field(description="the only address SSH to the builder is open to, /16 or narrower")
    system_disk_gib: int = Field(100, ge=40)
    key_name: str

    @field_validator("zone", "instance_type", "vpc_id", "subnet_id", "base_image_id", "key_name")
    @classmethod
    def _an_id(cls, v: str) -> str:
        # an id or name of the cloud's: one word (an empty key_name launched the builder with no key pair, so `image
        # build` could not log in; an empty vpc_id / subnet_id / base_image_id reached the provider as "not given")
        if not v or any(c.isspace() for c in v):
            raise ValueError(f"{v!r} is not an id: write the cloud's id or name, one word with no spaces")
        return v


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    recipe: str
    phase: Phase
    builder: _Builder
    manifest_sha256: Sha256 = Field(None, description="phase image/done: sha256 of the build manifest")
    builder_instance_id: str | None = Field(None, description="phase done: the builder the image was made from")


def _config_problems(cfg: PipelineConfig, recipe) -> list[tuple[str, str]]:
    b = cfg.builder
    out = []
    regions = recipe.regions.get(b.cloud, [])
    if b.region not in regions:
        out.append(
            (
                "builder.region",
                f"recipe {recipe.name} copies its image to {b.cloud} {', '.join(regions) or 'no region'}; "
                f"build in one of those" + did_you_mean(b.region, regions),
            )
        )
    itype = catalog.instance_type(b.cloud, b.instance_type)
    if itype is None:
        names = [t.type for t in catalog.instance_types(b.cloud)]
        out.append(
            (
                "builder.instance_type",
                f"{b.instance_type!r} is not in stacks/data/{b.cloud}.yaml" + did_you_mean(b.instance_type, names),
            )
        )
    elif recipe.gpus and itype.gpu not in recipe.gpus:
        out.append(
            (
                "builder.instance_type",
                f"{b.instance_type} has {itype.gpu}, which recipe {recipe.name} does not serve "
                f"({', '.join(recipe.gpus)}): the driver and vLLM facts are read on the builder's GPU",
            )
        )
    if b.region in catalog.regions(b.cloud):  # a region not in the catalog: its zones are not known
        if why := catalog.zone_problem(b.cloud, b.region, b.zone, itype.gpu if itype else None):
            out.append(("builder.zone", why))
    problem = cidr_problem(b.operator_cidr)
    if problem:
        out.append(("builder.operator_cidr", problem))
    if cfg.phase in ("image", "done") and not cfg.manifest_sha256:
        out.append(("manifest_sha256", f"phase {cfg.phase} needs the sha256 of the manifest `gpufleet image build` brought back"))
    if cfg.phase == "done" and not cfg.builder_instance_id:
        out.append(
            (
                "builder_instance_id",
                "phase done needs the builder's instance id (the stack output builder_instance_id of phase image)",
            )
        )
    return out


def load_pipeline(stack_file: Path):
    """(recipe, BuilderSpec, config) of an images stack file, or a UserError naming every problem."""

    shown = package_file(stack_file) if stack_file.is_absolute() else str(stack_file)  # a name's: relative when under cwd
    if not stack_file.exists():
        name = stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")
        folders = program_folders()
        looked = shown_folders(folders)
        if found_in(stack_file, folders) is not None:  # a stack name: the nearest names
            why = f"no such images stack {name!r} in {looked}" + did_you_mean(name, stack_names(folders))
            raise UserError([Problem(shown, "", why)])
        raise UserError(
            [
                Problem(
                    shown,
                    "",
                    f"no such file: give the path of an images stack file, or the name of a stack of {looked} "
                    f"({', '.join(stack_names(folders)) or 'none yet'})",
                )
            ]
        )
    raw = read_config(stack_file, shown).get(CONFIG_KEY)
    if not isinstance(raw, dict):
        raise UserError(
            [Problem(shown, f"config.{CONFIG_KEY}", "missing: put recipe, phase and builder under this key (see README)")]
        )
    try:
        cfg = PipelineConfig.model_validate(raw)
    except ValidationError as exc:
        raise UserError(
            [
                Problem(
                    shown,
                    ".".join(str(x) for x in e["loc"]),
                    inputs.model_error(e),
                )
                for e in exc.errors()
            ]
        ) from None
    if name_problem(cfg.recipe) or cfg.recipe not in (names := recipe_names()):  # a recipe name, never a path
        where = shown_folders(recipe_folders())
        raise UserError([Problem(shown, "recipe", f"no recipe {cfg.recipe!r} in {where}" + did_you_mean(cfg.recipe, names))])
    recipe = load_recipe(cfg.recipe)
    problems = _config_problems(cfg, recipe)
    if problems:
        raise UserError([Problem(shown, w, m) for w, m in problems])
    return recipe, BuilderSpec(**cfg.builder.model_dump()), cfg


def export(recipe, spec: BuilderSpec, cfg: PipelineConfig) -> None:
    """Declare the phase's resources of a loaded images stack and export their outputs."""
    for key, value in declare(recipe, spec, cfg.phase, cfg.manifest_sha256, cfg.builder_instance_id).items():
        pulumi.export(key, value)


def program(stack_file: Path) -> None:
    """The images program (a project's images/program/__main__.py): load the stack file, then export."""
    export(*load_pipeline(stack_file))
