"""Render a new stack for a cloud, region and environment from a template (the package's, TEMPLATES, or a file of the
user's), checked before writing.

Pure functions pick the region facts (zones selling the GPU, instance type, image recipe, a VPC /16 that
overlaps no stack of the same cloud); `plan` renders and validates with loader.validate; `write` refuses
to overwrite. Every bad input is a UserError and nothing is written.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
from pathlib import Path

import jinja2
from msgspec import Struct

from gpufleet import account, inputs, preview, registry, validation
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import create_exclusive, package_file
from gpufleet.registry import profile
from gpufleet.stacks import catalog, loader, lock
from gpufleet.stacks.project import checked_recipe_files, recipe_folders, shown, shown_folders
from gpufleet.stacks.spec import name_problem, vpc_prefix_problem

# The templates ship inside the package (not in a project's stacks/ folder); `region new --from` names one of them, or
# gives the path of a template file of the user's (template_file).
TEMPLATES = Path(__file__).parent / "stacks" / "templates"
TEMPLATES_SHOWN = package_file(TEMPLATES)
ENVIRONMENTS = ("dev", "staging", "prod")
CIDR_POOL = ipaddress.ip_network("10.0.0.0/8")
ARG = "arguments"
DEFAULT_FLEET = "llm"  # the template's fleet name (FleetSpec.name's default)


def fleet_suffix(fleet: str) -> str:
    """What a second fleet adds to the default fleet's names: its stack name and its API-key secret's."""
    return f"-{fleet}" if fleet != DEFAULT_FLEET else ""


class Plan(Struct, frozen=True):
    stack: str
    path: Path
    text: str
    reasons: tuple[str, ...]


Network = ipaddress.IPv4Network | ipaddress.IPv6Network  # a stack file's vpc_cidr as written (checked later)


def defaults(env: str) -> dict:
    shown = f"{TEMPLATES_SHOWN}/defaults.yaml"
    return inputs.mapping(inputs.load_mapping(TEMPLATES / "defaults.yaml", shown).get(env), shown, env)


def name_problems(name: str) -> list[Problem]:
    """Why `name` cannot be a stack name (and a file name under stacks/): loader.bad_stack_name, the rule of --stack."""
    why = loader.bad_stack_name(name)
    return [Problem(ARG, "--name", why)] if why else []


def said_problems(stack: str, cloud: str, region: str, env: str, fleet: str) -> list[Problem]:
    """A --name read as another fleet's (`<cloud>-<region>-<environment>[-<fleet>]`, loader.named_triple): every
    command would refuse the stack file (loader.stack_name_problems), so it is not written."""
    named = loader.named_triple(stack) if not name_problems(stack) else None
    if named is None or named == (cloud, region, env):
        return []
    ours = f"{cloud}-{region}-{env}{fleet_suffix(fleet)}"
    return [
        Problem(
            ARG,
            "--name",
            f"{stack!r} reads as a stack of {' '.join(named)} (<cloud>-<region>-<environment>[-<fleet>]), not of "
            f"{cloud} {region} {env}: every command would refuse its file; leave --name out ({ours}) or pass one that "
            f"starts with {cloud}-{region}-{env} or reads as no stack of that form",
        )
    ]


def fleet_problems(fleet: str) -> list[Problem]:
    """Why `fleet` cannot be a fleet name (spec.py FleetSpec.name: it starts every cloud-side name)."""
    why = name_problem(fleet, 21, "fleet name", "qwen")
    return [Problem(ARG, "--fleet", why)] if why else []


def refuse_name_clashes(stack: str, shown: str, fleet, raw: dict, root: Path) -> list[str]:
    """Preview the new stack with every stack of its cloud, as in one account (gpufleet/account.py): a cloud-side
    name another stack already uses in its documented scope is refused before anything is written. Returns the
    stacks whose names could not be compared (their files do not validate: skipped, not fatal, as for the CIDRs)."""

    inventory = preview.preview_fleet(fleet, raw)  # its problems on the file it would be (fleet.file), not <stack>
    others = [s for s in loader.stack_names(root) if s != stack]
    report = account.check(
        root, fleet.spec.cloud, extra=((stack, shown, fleet, inventory.resources),), skip_broken=True, only=others
    )
    problems = [p for p in report.problems if p.file == shown] + account.clash_problems(report, stack)
    if problems:
        hint = f"pass --fleet NAME (a second fleet of {fleet.spec.environment} in {fleet.spec.region}), e.g. --fleet qwen"
        raise UserError([Problem(p.file, p.path, f"{p.message}; {hint}") for p in problems])
    return [s for s in report.broken if stack_cloud(s, root) in (fleet.spec.cloud, None)]


def stack_cloud(stack: str, root: Path) -> str | None:
    """The cloud a stack file names (None when it cannot be read or names none)."""
    try:
        _, config = loader.read_stack_config(stack, root)
    except UserError:
        return None
    fleet = config.get(loader.CONFIG_KEY)
    cloud = fleet.get("cloud") if isinstance(fleet, dict) else None
    return cloud if isinstance(cloud, str) else None


# The stack file's fields an option of `region new` sets as given (the rest come from the catalog and the defaults).
# fleet.network: the VPC against the template's subnet_prefix (a /24 VPC leaves no room for /24 subnets).
OPTION_FIELDS = {
    "fleet.zones": "--zone",
    "fleet.network.vpc_cidr": "--cidr",
    "fleet.network": "--cidr",
    "fleet.alarms.contact_group": "--contact-group",
}


def on_option(p: Problem, shown: str, given: dict[str, bool]) -> Problem:
    """A problem of the rendered stack on a field an option given set, said on that option (the file is not written
    yet: the option is what to change), with the field it became."""
    option = OPTION_FIELDS.get(p.path)
    if p.file != shown or option is None or not given.get(option):
        return p
    return Problem(ARG, option, f"{p.message} ({shown}: {p.path})")


# the fit check's pointer at the stack it sized (sizing.checks.fit_problems): a stack `region new` did not write
FIT_SEE = re.compile(r" \(see `gpufleet plan fit --stack [^`]*`\)$")
FIT_FLAGS = {
    "tensor_parallel_size": "--gpus",
    "dtype": "--dtype",
    "quantization": "--quantization",
    "kv_cache_dtype": "--kv-cache-dtype",
    "max_model_len": "--max-model-len",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "gpu_memory_utilization": "--gpu-memory-utilization",
}


def fit_command(raw: dict, gpu: str, cloud: str) -> str:
    """`gpufleet plan fit` of the model and serving settings the rendered stack holds, on `gpu`: what the refused
    stack would have sized, runnable without it."""
    model = raw.get("model") or {}
    serving = raw.get("serving") or {}
    args = ["gpufleet", "plan", "fit", "--model", str(model.get("catalog") or model.get("name")), "--gpu", gpu]
    for key, flag in FIT_FLAGS.items():
        if serving.get(key) is not None:
            args += [flag, str(serving[key])]
    return shlex.join([*args, "--cloud", cloud])


def on_fit(p: Problem, shown: str, raw: dict, gpu: str, cloud: str, env: str) -> Problem:
    """The fit problem of the rendered stack, said on --gpu (the only serving choice `region new` takes), with a
    `plan fit` that runs without the stack file, which was not written."""
    if p.file != shown or p.path != "fleet.serving" or not FIT_SEE.search(p.message):
        return p
    return Problem(
        ARG,
        "--gpu",
        f"{FIT_SEE.sub('', p.message)}. {shown} was not written: `region new` chooses only the GPU for the "
        f"{env} defaults' model and serving settings, so pass a --gpu they fit (`{fit_command(raw, gpu, cloud)}` "
        "shows the figures; change --gpu there to compare), or write the stack with a GPU that fits and change "
        "fleet.model / fleet.serving in it by hand",
    )


def cidr_problems(cidr: str) -> list[Problem]:
    """Why `cidr` is not an IPv4 network like 10.40.0.0/16."""
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [Problem(ARG, "--cidr", f"{cidr!r} is not an IPv4 network: give an address and a prefix, e.g. 10.40.0.0/16")]
    if net.version != 4:
        return [Problem(ARG, "--cidr", f"{cidr!r} is IPv6; the VPC needs an IPv4 network, e.g. 10.40.0.0/16")]
    if (
        ipaddress.ip_interface(cidr).ip != net.network_address
    ):  # host bits set: the spec refuses them in network.vpc_cidr and ssh_cidrs; here they were dropped silently
        if why := vpc_prefix_problem(net.prefixlen):  # 10.60.0.0/7 was told 'did you mean 10.0.0.0/7?', refused too
            return [Problem(ARG, "--cidr", f"{cidr!r} is not a network address (host bits set), and its {why}")]
        return [Problem(ARG, "--cidr", f"{cidr!r} is not a network address (host bits set): did you mean {net}?")]
    return []


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
        problems = [  # each zone once: a bad zone given twice was named twice (review F13)
            Problem(ARG, "--zone", why) for z in dict.fromkeys(wanted) if (why := catalog.zone_problem(cloud, region, z, gpu))
        ]
        problems += [
            Problem(ARG, "--zone", f"{z} is given {wanted.count(z)} times; name each zone once")
            for z in sorted({z for z in wanted if wanted.count(z) > 1})
        ]
        if problems:
            raise UserError(problems)
        chosen = list(wanted)
    else:
        chosen = selling[:count]
    if env == "prod" and len(chosen) < 2:
        if wanted and len(selling) >= 2:  # the user named too few zones; the region has enough
            others = [z for z in selling if z not in chosen]
            why = (
                f"prod needs at least 2 zones; you gave {len(chosen)} ({', '.join(chosen)}), and {region} sells {gpu} in "
                f"{len(selling)} ({', '.join(selling)}): add another --zone, e.g. --zone {others[0]}"
            )
            raise UserError([Problem(ARG, "--zone", why)])
        raise UserError(
            [
                Problem(
                    ARG,
                    "--env",
                    f"prod needs at least 2 zones selling {gpu} in {region}; "
                    f"{region} has {len(selling)} ({', '.join(selling) or 'none'}); pick another --gpu or region",
                )
            ]
        )
    return chosen


def existing_cidrs(cloud: str, root: Path) -> dict[str, Network]:
    """stack -> VPC CIDR of every stacks/Pulumi.*.yaml of that cloud (spec default if unset)."""
    return existing_cidrs_and_skipped(cloud, root)[0]


def existing_cidrs_and_skipped(cloud: str, root: Path) -> tuple[dict[str, Network], list[str]]:
    """existing_cidrs, and the problems of stack files that could not be read (skipped, not fatal: one broken
    stack file must not stop opening another region)."""
    out, skipped = {}, []
    for stack in loader.stack_names(root):
        try:
            _, config = loader.read_stack_config(stack, root)
        except UserError as exc:
            skipped += [str(p) for p in exc.problems]
            continue
        fleet = config.get(loader.CONFIG_KEY)
        network = fleet.get("network") if isinstance(fleet, dict) else None
        if not isinstance(fleet, dict) or fleet.get("cloud") != cloud:
            continue
        cidr = network.get("vpc_cidr", "10.20.0.0/16") if isinstance(network, dict) else "10.20.0.0/16"
        try:
            out[stack] = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            skipped.append(f"stacks/Pulumi.{stack}.yaml: fleet.network.vpc_cidr: {cidr!r} is not a network")
    return out, skipped


def allocate_cidr(taken: dict[str, Network], wanted: str | None = None) -> str:
    if wanted:
        if problems := cidr_problems(wanted):
            raise UserError(problems)
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
    """The first recipe by name that serves `gpu`: the project's images/recipes/ and the package's
    (project.checked_recipe_files: a project's recipe shadows a shipped one of the same name)."""
    for name, path in checked_recipe_files().items():
        doc = inputs.load_mapping(path, shown(path))
        gpus = doc.get("gpus")
        if isinstance(gpus, list) and gpu in gpus and isinstance(doc.get("name"), str):
            return name
    raise UserError([Problem(ARG, "--gpu", f"no image recipe in {shown_folders(recipe_folders())} supports {gpu}")])


def check_image(recipe: str, gpu: str, cloud: str, region: str) -> str:
    """What images/lock.json holds for the recipe in the region, as the reason `region new` prints; a UserError when it
    holds nothing there. A placeholder entry is said to be one: no image was built, `pulumi up` would refuse it."""

    if why := lock.absent():  # the file itself: named once, with no entry to point at
        raise UserError([Problem(str(lock.lock_path()), "", why)])
    ref = lock.image_for(recipe, cloud, region)
    if isinstance(ref, str):
        raise UserError([Problem("images/lock.json", f"{recipe}.{cloud}.{region}", ref)])
    if ref.placeholder:
        return (
            f"image recipe {recipe}: supports {gpu}; images/lock.json holds only a placeholder for {cloud} "
            f"{region} ({ref.image_id}): {lock.BUILD_AND_LOCK} before `pulumi up`"
        )
    return f"image recipe {recipe}: supports {gpu}; locked for {cloud} {region} in images/lock.json ({ref.image_id})"


def yaml_scalar(value: str) -> str:
    """`value` as a YAML scalar that reads back as itself, as gpufleet reads stack files (inputs.parse_yaml): plain when
    it does (llm-oncall), else double-quoted (JSON's escapes are YAML's): `a #b` plain would read as `a`, `on` as true."""
    for written in (value, json.dumps(value, ensure_ascii=False), json.dumps(value)):
        try:
            if inputs.parse_yaml(f"k: {written}\n", "--contact-group") == {"k": value}:
                return written
        except UserError:
            continue
    return json.dumps(value)


def chosen_contact_group(cloud: str, env: str, given: str | None, d: dict) -> tuple[str, str]:
    """(alarms.contact_group, why) of a new stack: the one given, else the cloud's example of the form its alarms
    notify (its profile's example_contact_group), else the environment's default; refused (on --contact-group) when
    the cloud's alarms would notify nobody with it (its checks' contact_group_problem): a prod stack whose alarms
    reach no one was written with only a preview note."""
    example = profile(cloud).example_contact_group.format(env=env)
    contact = given if given is not None else example or d["alarms"]["contact_group"]
    if why := registry.module(cloud, "checks").contact_group_problem(contact):
        shown = "" if given is not None else f" (the {env} default for {cloud}: a fault of {TEMPLATES_SHOWN}, not yours)"
        raise UserError([Problem(ARG, "--contact-group", f"{why}{shown}")])
    if given is not None:
        return contact, f"alarms.contact_group {contact}: as given (--contact-group)"
    source = f"{cloud}'s example ({profile(cloud).said} alarms notify this form)" if example else f"{env} default"
    return contact, (
        f"alarms.contact_group {contact}: {source}, a placeholder: put your on-call contact there, or pass "
        "--contact-group (`gpufleet preview` says what the cloud takes)"
    )


def template_file(template: str) -> Path | None:
    """The file a `--from` value names when it is not a template of the package: a value with a '/', or an entry of
    the current folder (a file, a folder or a link: _render_file says what is wrong with it) when the package has no
    template of that name (as image recipes are told from recipe files: images/recipes.py recipe_path). None for a
    template of the package: a *.j2 name of TEMPLATES (its defaults.yaml is not a template), or a name of nothing."""
    if "/" in template:
        return Path(template)
    return Path(template) if template not in _shipped() and os.path.lexists(template) else None


def _give() -> str:
    """What `--from` takes."""
    return (
        f"give the path of a stack template file (e.g. a copy of {TEMPLATES_SHOWN}/stack.yaml.j2), or the name of a "
        f"template of {TEMPLATES_SHOWN}/ ({', '.join(_shipped())})"
    )


def _environment(folder: Path) -> jinja2.Environment:
    """The one jinja2 environment every template renders in; `{% include %}` reads from `folder` (the template's own)."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )


def _shipped() -> list[str]:
    return sorted(p.name for p in TEMPLATES.glob("*.j2"))


def render(template: str, **values) -> str:
    """The text `template` renders with `values`: a template of the package (by name) or a template file."""
    path = template_file(template)
    if path is not None:
        return _render_file(template, path, values)
    try:
        if template not in _shipped():  # defaults.yaml, beside the templates, was rendered as one
            raise jinja2.TemplateNotFound(template)
        shipped = _environment(TEMPLATES).get_template(template)
    except jinja2.TemplateNotFound:
        raise UserError(
            [
                Problem(
                    ARG,
                    "--from",
                    f"no template {template!r} in {TEMPLATES_SHOWN}/" + did_you_mean(template, _shipped()) + "; a template "
                    "file of your own is given by its path (e.g. ./stack.yaml.j2)",
                )
            ]
        ) from None
    return shipped.render(**values)


def _render_file(template: str, path: Path, values: dict) -> str:
    """A user's template file rendered as the package's are; what goes wrong in it (a syntax error, a variable it is not
    given, an include that is not next to it, an error in an expression) is a UserError naming the file as given."""
    shown = template
    if not os.path.lexists(path):
        raise UserError([Problem(ARG, "--from", f"no such file {shown!r}: {_give()}")])
    if os.path.isdir(path):  # `./` or a folder: was `./: is a folder, not a file`, not naming --from
        raise UserError([Problem(ARG, "--from", f"{shown!r} is a folder, not a template file: {_give()}")])
    text = inputs.read_text(path, shown)  # a broken link, a device, not UTF-8: said on the file
    env = _environment(path.parent)
    try:
        return env.from_string(text).render(**values)
    except jinja2.TemplateSyntaxError as exc:
        where = shown if exc.name is None else str(path.parent / exc.name)  # exc.name: an included template's
        raise UserError([Problem(where, f"line {exc.lineno}", f"{exc.message}: correct the template")]) from None
    except jinja2.TemplateNotFound as exc:
        raise UserError(
            [Problem(shown, "", f"includes {exc.name!r}, which is not in {path.parent}: put it next to the template")]
        ) from None
    except jinja2.UndefinedError as exc:
        given = ", ".join(sorted(values))
        raise UserError([Problem(shown, "", f"{exc.message}: a template is given {given} (docs/environments.md)")]) from None
    except (jinja2.TemplateError, ArithmeticError, LookupError, TypeError, ValueError, RecursionError) as exc:
        # any other error in the template's own expressions (`{{ 1 / 0 }}`, a filter given the wrong type)
        raise UserError([Problem(shown, "", f"cannot render: {type(exc).__name__}: {exc}")]) from None


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
    fleet: str = DEFAULT_FLEET,
    contact_group: str | None = None,
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
    if gpu is not None and not gpu.strip():  # `--gpu ''` took the default, where every other empty option is refused
        raise UserError(
            [Problem(ARG, "--gpu", f"is empty: give a GPU kind, or leave --gpu out for the {env} default ({d['gpu']})")]
        )
    gpu = d["gpu"] if gpu is None else gpu
    if gpu not in catalog.gpu_kinds():
        raise UserError([Problem(ARG, "--gpu", f"unknown GPU kind {gpu!r}" + did_you_mean(gpu, catalog.gpu_kinds()))])
    stack = name if name is not None else f"{cloud}-{region}-{env}{fleet_suffix(fleet)}"
    problems = (
        name_problems(stack)
        + said_problems(stack, cloud, region, env, fleet)
        + fleet_problems(fleet)
        + (cidr_problems(cidr) if cidr is not None else [])
    )
    if problems:
        raise UserError(problems)
    path = loader.stack_path(stack, root)
    chosen = pick_zones(cloud, region, gpu, d["zones"], env, zones)
    itype = catalog.default_instance_type(cloud, gpu, 1)
    if itype is None:
        raise UserError([Problem(ARG, "--gpu", f"{cloud} has no single-{gpu} instance type in the catalog")])
    existing, skipped = existing_cidrs_and_skipped(cloud, root)
    taken = {s: n for s, n in existing.items() if s != stack}
    vpc = allocate_cidr(taken, cidr)
    recipe = recipe_for(gpu)
    image_reason = check_image(recipe, gpu, cloud, region)
    kind = catalog.gpu_kinds()[gpu]
    dtype_reason: tuple[str, ...] = ()
    if d["serving"]["dtype"] == "bfloat16" and kind.cc < (8, 0):  # bf16 needs compute capability 8.0 (vLLM)
        d = {**d, "serving": {**d["serving"], "dtype": "float16"}}
        dtype_reason = (
            f"dtype float16: {env} defaults to bfloat16, which {gpu} (compute capability {kind.compute_capability}) lacks",
        )
    selling = [z for z in sorted(regions[region]) if gpu in regions[region][z]]
    contact, contact_reason = chosen_contact_group(cloud, env, contact_group, d)
    reasons = (
        f"zones {', '.join(chosen)}: {env} wants {d['zones']}; zones of {region} selling {gpu}: {', '.join(selling)}",
        f"instance type {itype.type}: the catalog's default size for 1x {gpu} ({itype.vcpu} vCPU, {itype.memory_gib} GiB)",
        image_reason,
        f"VPC {vpc}: first free /16 of 10.0.0.0/8 next to {cloud} stacks "
        + (", ".join(f"{s} {n}" for s, n in sorted(taken.items())) or "(none)")
        if not cidr
        else f"VPC {vpc}: as asked, overlaps no {cloud} stack",
        f"replicas {d['replicas']['min']}-{d['replicas']['max']}, billing {d['billing']}: {env} defaults "
        f"({TEMPLATES_SHOWN}/defaults.yaml)",
        contact_reason,
        f"model {d['model']['name']}: {env} default; its sha256 is an example value, replace it with `sha256sum` of your archive before `pulumi up`",
        *dtype_reason,
        *(f"nothing from {s} (skipped: cannot be read; its VPC is not known)" for s in skipped),
    )
    text = render(
        template,
        cloud=cloud,
        region=region,
        env=env,
        name=fleet,
        api_key_secret=f"gpufleet-{env}{fleet_suffix(fleet)}-vllm-api-key",  # a fleet's own key, not its neighbour's
        gpu=gpu,
        zones=chosen,
        instance_type=itype.type,
        recipe=recipe,
        vpc_cidr=vpc,
        scheme=profile(cloud).object_scheme,
        bucket_suffix=profile(cloud).example_bucket_suffix,
        d=d,
        contact_group=yaml_scalar(contact),
        contact_example=contact_group is None,  # the file says it is an example value to replace
        why=f"zones selling {gpu}, {itype.type}, recipe {recipe}, VPC {vpc}",
    )
    shown = f"stacks/{path.name}"
    try:
        raw = inputs.parse_yaml(text, shown)["config"][loader.CONFIG_KEY]
    except (UserError, KeyError, TypeError) as exc:
        why = (
            "; ".join(str(p) for p in exc.problems)
            if isinstance(exc, UserError)
            else f"it holds no config: {loader.CONFIG_KEY}: mapping"
        )
        raise UserError(
            [
                Problem(
                    ARG,
                    "--from",
                    f"template {template} did not render a stack file ({why}); pass a stack template of "
                    f"{TEMPLATES_SHOWN}/: {', '.join(_shipped())}, or a template file that renders a stack file as they do",
                )
            ]
        ) from None
    given = {"--zone": bool(zones), "--cidr": cidr is not None, "--contact-group": contact_group is not None}
    try:
        validated = validation.validate(raw, stack=stack, file=shown)
        unseen = refuse_name_clashes(stack, shown, validated, raw, root)
    except UserError as exc:
        raise UserError([on_fit(on_option(p, shown, given), shown, raw, gpu, cloud, env) for p in exc.problems]) from None
    reasons += tuple(
        f"names without comparing them with those of {s} (its file does not validate: `gpufleet preview --stack {s}` "
        "says why; `gpufleet check` compares them once it does)"
        for s in unseen
    )
    return Plan(stack=stack, path=path, text=text, reasons=reasons)


EXISTS = "already exists; not overwriting it (pass --name for another stack, or edit the file)"


def write(p: Plan) -> Path:
    """Create the stack file atomically and exclusively (temp file + link(2)): never a partial file, never
    over an existing one, even when two `region new` run at once."""
    create_exclusive(
        p.path,
        p.text,
        shown=f"stacks/{p.path.name}",
        exists=EXISTS,
    )
    return p.path
