"""`gpufleet image ...`: check recipes, build a golden image over SSH, render its scripts, show the lock."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import typer
from msgspec.structs import asdict
from rich.text import Text

from gpufleet.cli import options, renderers
from gpufleet.errors import Problem, UserError, console, did_you_mean, one_line, print_problems

# Engines (and costly standard modules such as importlib.metadata) are imported inside the functions that use them,
# not at the top (issue 25's rule, measured): `gpufleet` imports every command module to parse its arguments and build
# its help, and importing every engine there (pulumi and the providers, jinja2, the cost, image, rollout and simulation
# pipelines) took about 215 ms against 33 ms for the command modules alone (`python -X importtime`, 2026-12-06), on
# every command, `--help` included.

FORMATS = ("table", "json")


def _out():
    return console(soft_wrap=True)


def _err():
    return console(stderr=True, soft_wrap=True)


image_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Golden images: recipes, builds over SSH, the lock file the stacks read (docs/images.md).\n\n"
    "\b\nExamples:\n"
    "  gpufleet image check\n"
    "  gpufleet image build --recipe cuda13-vllm --dry-run\n"
    "  gpufleet image lock show",
)
lock_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="images/lock.json: image id per recipe, cloud and region.\n\n\b\nExamples:\n  gpufleet image lock show --json",
)
image_app.add_typer(lock_app, name="lock")


def register(app: typer.Typer) -> None:
    app.add_typer(image_app, name="image")


def _recipe(name: str):
    from gpufleet.images.recipes import load_recipe

    return load_recipe(name, "--recipe")


def _check_problems(recipe, gpu: str | None) -> list[Problem]:
    """What does not hold together in a recipe (and against `gpu`, a known GPU kind): a failed `image check` (exit 1),
    and what `image build` and `image render` refuse (exit 2): neither makes scripts of a recipe check fails."""
    from gpufleet.images import compat
    from gpufleet.images.steps import python_lock_text
    from gpufleet.stacks import catalog

    problems = [Problem(recipe.file, p, m) for p, m in compat.recipe_problems(recipe)]
    problems += [Problem(recipe.file, p, m) for p, m in compat.lock_problems(recipe, python_lock_text(recipe))]
    if gpu is not None:
        kinds = catalog.gpu_kinds()
        if gpu in kinds:
            clashes = compat.gpu_clashes(recipe, kinds[gpu])
            others = [n for n in compat.recipes_serving(gpu) if n != recipe.name]
            hint = f"; use {' or '.join(others)}" if others else ""
            if gpu not in recipe.gpus or clashes:
                why = "; ".join(clashes) if clashes else f"{gpu} is not among the GPUs it claims ({', '.join(recipe.gpus)})"
                problems.append(Problem(recipe.file, "recipe.gpus", f"recipe {recipe.name} does not serve {gpu}: {why}{hint}"))
    return problems


@image_app.command("check")
def check(
    recipe: list[str] | None = typer.Option(
        None,
        "--recipe",
        "-r",
        autocompletion=options.complete_recipe,
        help="recipe name or file (repeatable); default: every recipe, the project's images/recipes/ and the shipped ones",
    ),
    gpu: str | None = typer.Option(
        None, "--gpu", autocompletion=options.complete_gpu, help="also check the recipe against this GPU kind (e.g. V100-16G)"
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Check that a recipe's driver, CUDA, torch, vLLM and Python fit together and fit the GPUs it claims. Exit 1 when
    a recipe does not hold together; 2 for an unknown recipe or GPU.

    \b
    Examples:
      gpufleet image check
      gpufleet image check --recipe cuda13-vllm --gpu A10
      gpufleet image check --json
    """
    from gpufleet.images.recipes import load_recipe, misnamed, recipe_names, recipe_path
    from gpufleet.images.steps import build_blockers, render, unverified
    from gpufleet.stacks import catalog

    recipe = list(dict.fromkeys(recipe)) if recipe else recipe  # each recipe once (-r X -r X checked it twice)
    files = [recipe_path(name) for name in recipe or recipe_names()] if output else []  # the recipe files it reads
    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [], *files))
    if gpu is not None and gpu not in (kinds := catalog.gpu_kinds()):
        raise UserError([Problem("--gpu", "", f"unknown GPU kind {gpu!r}" + did_you_mean(gpu, kinds))])
    # an unknown or unreadable recipe: bad input (2); a name it listed itself is no --recipe's
    recipes = [_recipe(name) for name in recipe] if recipe else [load_recipe(name) for name in recipe_names()]
    for note in [] if recipe else misnamed():  # every recipe: say which .yaml files are none
        _err().print(f"note: {note}", soft_wrap=True)
    for r in recipes:  # a recipe that check calls ok renders too: a template error is bad input (2), as in render/build
        render(r)
    results: list[dict[str, Any]] = [
        {
            "recipe": r.name,
            "ok": not (found := _check_problems(r, gpu)),
            "pins": r.pins,
            "serves": list(r.gpus),
            "checked_against": gpu,
            "problems": [{"file": p.file, "field": p.path, "message": p.message} for p in found],
            "before_a_real_build": [{"field": path, "message": msg} for path, msg in build_blockers(r)],
            "unverified": list(unverified(r)),
        }
        for r in recipes
    ]
    problems = [Problem(p["file"], p["field"], p["message"]) for x in results for p in x["problems"]]
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: {"recipes": results, "ok": not problems}),
        table=renderers.Draw(lambda out: _print_check(out, results)),
    )
    if problems:  # the check failed (exit 1), as `plan fit` that does not fit
        print_problems(problems, _err())
        raise typer.Exit(1)


def _print_check(out, results: list[dict]) -> None:
    for x in results:
        if not x["ok"]:
            continue  # its problems are printed on standard error
        p = x["pins"]
        line = ", ".join(f"{k} {p[k]}" for k in ("driver", "cuda", "python", "torch", "vllm") if k in p) or ", ".join(
            f"{k} {v}" for k, v in p.items()
        )
        out.print(
            f"ok  {x['recipe']}: {line}; serves {', '.join(x['serves']) or 'no GPU (self-test)'}"
            + (f"; checked against {x['checked_against']}" if x["checked_against"] else ""),
            soft_wrap=True,
        )
        for b in x["before_a_real_build"]:
            out.print(f"    before a real build: {b['field']}: {b['message']}", soft_wrap=True)
        for note in x["unverified"]:
            out.print(f"    unverified: {note}", soft_wrap=True)


def _print_event(e) -> None:
    width = 18
    if e.kind == "check":
        return
    label, colour = {
        "satisfied": ("ok", "green"),
        "apply": ("apply", "yellow"),
        "applied": ("applied", "green"),
        "would-apply": ("would apply", "yellow"),
        "cleanup": ("cleanup", "magenta"),
        "retry": ("retry", "red"),
        "manifest": ("manifest", "cyan"),
    }.get(e.kind, (e.kind, ""))
    where = f"[{e.index}/{e.total}] {e.step:<{width}}" if e.step else " " * (len(str(e.total)) * 2 + 4 + width)
    _out().print(Text.assemble(f"{where} ", (f"{label:<11}", colour), f" {e.detail}"))


# The builder's address as SSH takes it: an IP address or a host name (inputs.host_problem); the user and the port
# have options of their own. A login name: letters, digits, '_', '.' and '-', at most 32 characters.
USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}")


def _host_problem(host: str) -> str | None:
    """Why `host` is not an address `image build --host` can connect to; None when it is."""
    from gpufleet.inputs import host_problem

    fix = "give the builder's address alone, e.g. --host 203.0.113.7 or --host builder.example.com"
    if not host.strip():
        return f"is empty: {fix}"
    if "/" in host:
        return f"{host!r} is a URL or a path, not an address: {fix}"
    if "@" in host:
        return f"{host!r} has a user in it: {fix}, and the user with --user"
    why = host_problem(host)
    if why and ":" in host:
        return f"{host!r} is not an IP address or a host name: {fix}, and the port with --port"
    return f"{host!r} {why}: {fix}" if why else None


ENCRYPTED_KEY = (
    "the key is encrypted; the build takes no passphrase and uses no agent: give an unencrypted key "
    "(a copy without one: cp KEY KEY.build && ssh-keygen -p -N '' -f KEY.build)"
)


def _key_problem(key: Path) -> str | None:
    """Why the --key file cannot be the build's login key (it takes no passphrase and uses no agent); None when it can.
    Loaded as paramiko will load it, so a public key, an encrypted key or another file is not taken for a refused
    login or a lost connection after it connects."""
    import paramiko

    try:
        paramiko.PKey.from_path(key)
    except paramiko.PasswordRequiredException:
        return ENCRYPTED_KEY
    except paramiko.pkey.UnknownKeyType as exc:  # a key cryptography reads and paramiko has no class for (DSA)
        kind = getattr(exc, "key_type", None)
        shown = getattr(kind, "__name__", str(kind))
        return f"is a key paramiko does not take ({shown}; it takes RSA, ECDSA and Ed25519): give an ed25519 key"
    except (paramiko.SSHException, ValueError, TypeError, UnicodeDecodeError) as exc:
        if isinstance(exc, TypeError) and "password" in str(exc).lower():  # cryptography's word for an encrypted key
            return ENCRYPTED_KEY
        if key.name.endswith(".pub"):
            return f"is not a private key paramiko can load (this is a public key): give the private key {key.name[:-4]}"
        return "is not a private key paramiko can load: give the builder's private key, e.g. ~/.ssh/id_ed25519"
    return None


def _target_problems(
    host: str, user: str, key: Path | None, known_hosts: Path, accept_new_host_key: bool = False
) -> list[Problem]:
    """Why `image build` cannot connect as asked, found before it connects: the address, the user, the key file (a
    private key paramiko can load without a passphrase: no agent and no default keys are used) and the known_hosts
    file (read as SSH will read it, and writable when --accept-new-host-key may add a key to it)."""
    from gpufleet import inputs
    from gpufleet.images.runner import read_known_hosts

    problems = []
    if why := _host_problem(host):
        problems.append(Problem("--host", "", why))
    if not USER.fullmatch(user):
        what = "is empty" if not user else f"{user!r} is not a user name"
        problems.append(
            Problem("--user", "", f"{what}: letters, digits, '_', '.' and '-', at most 32 characters, e.g. --user ubuntu")
        )
    if key is None:
        problems.append(
            Problem("--key", "", "missing: give the builder's private key file (the build uses no SSH agent and no default keys)")
        )
    else:
        try:
            inputs.read_text(key.expanduser(), str(key), "give the builder's private key file")
        except UserError as exc:
            problems += _read_for("--key", exc)
        else:
            if why := _key_problem(key.expanduser()):
                problems.append(Problem("--key", str(key), why))
    try:
        read_known_hosts(known_hosts.expanduser())
    except UserError as exc:
        problems += _read_for("--known-hosts", exc)
    else:
        if accept_new_host_key:  # a new host key is written there: found now, not as a lost connection
            from gpufleet.files import output_problems

            problems += output_problems(known_hosts.expanduser(), flag="--known-hosts", make_folders=True)
    return problems


def _wait_problems(waits: dict[str, float]) -> list[Problem]:
    """The options that would have the runner wait longer than it can (runner.MAX_WAIT_S, an hour) at once."""
    from gpufleet.images.runner import MAX_WAIT_S

    return [
        Problem(flag, "", f"{value:g} s is more than an hour: give at most {MAX_WAIT_S} seconds")
        for flag, value in waits.items()
        if value > MAX_WAIT_S
    ]


def _read_for(flag: str, exc: UserError) -> list[Problem]:
    """The problems of a file given with `flag`, as `flag: file[:line:column]: message`."""
    return [Problem(flag, f"{p.file}:{p.line}:{p.column}" if p.line else p.file, p.message) for p in exc.problems]


@image_app.command("build")
def build(
    recipe: str = typer.Option(..., "--recipe", "-r", autocompletion=options.complete_recipe, help="recipe name or file"),
    host: str | None = typer.Option(None, "--host", "-H", help="the builder's address (not needed for --dry-run)"),
    port: int = typer.Option(22, "--port", "-p", min=1, max=65535, help="the builder's SSH port"),
    user: str = typer.Option("root", "--user", "-u", help="SSH user; not root means every script runs under sudo -n"),
    key: Path | None = typer.Option(
        None, "--key", "-k", parser=options.path, help="private key file, unencrypted (required with --host: no agent)"
    ),
    known_hosts: Path = typer.Option(
        Path("~/.ssh/known_hosts"), "--known-hosts", parser=options.path, help="host keys to verify against"
    ),
    accept_new_host_key: bool = typer.Option(
        False, "--accept-new-host-key", help="record the key of a host not yet in --known-hosts (a fresh builder)"
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="run only the checks and print the plan; without --host, print the ordered steps"
    ),
    retries: int = typer.Option(3, "--retries", min=0, help="reconnect attempts after a lost connection"),
    backoff: float = options.real(
        2.0, "--backoff", min=0, help="seconds before the first reconnect; doubles each time, up to an hour"
    ),
    connect_timeout: int = typer.Option(10, "--connect-timeout", min=1, help="seconds to wait for the SSH connection"),
    keepalive: float = options.real(
        10.0, "--keepalive-s", min=0, help="SSH keepalive interval; no answer for 2 intervals = a lost connection (0: off)"
    ),
    manifest_out: Path | None = typer.Option(
        None,
        "--manifest-out",
        parser=options.path,
        help="where to save the manifest read back from the host; default build/images/<recipe>-<host>.manifest.json",
    ),
) -> None:
    """Run a recipe's steps on a builder over SSH: check, apply what is missing, re-check, write the manifest. Exit 1
    when a step fails or the connection is lost for good (re-run to resume); 2 for bad input.

    \b
    Examples:
      gpufleet image build --recipe cuda13-vllm --dry-run
      gpufleet image build -r cuda13-vllm -H 203.0.113.7 -k ~/.ssh/builder --accept-new-host-key
    """
    import paramiko

    from gpufleet.images.runner import ConnectionLost, HostKeyRefused, Runner, SshHost, StepFailed, SudoRefused, Target
    from gpufleet.images.steps import build_blockers, render

    out, err = _out(), _err()
    r = _recipe(recipe)
    problems = _check_problems(r, None)
    from gpufleet.files import output_problems

    dest = manifest_out or Path("build") / "images" / f"{r.name}-{host}.manifest.json"
    dest_flag = "--manifest-out" if manifest_out is not None else "manifest (default of --manifest-out)"
    if manifest_out is not None:  # checked before the build, not after it
        problems += output_problems(manifest_out, flag=dest_flag)
    elif host is not None and not dry_run:  # the default too: a build of up to an hour is not lost at its end
        problems += output_problems(dest, flag=dest_flag, make_folders=True)
    if host is not None:
        problems += _target_problems(host, user, key, known_hosts, accept_new_host_key)
        problems += _wait_problems({"--backoff": backoff, "--connect-timeout": connect_timeout, "--keepalive-s": keepalive})
    if problems:
        raise UserError(problems)
    if host is None:
        if not dry_run:
            raise UserError([Problem("--host", "", "missing: the builder to run on (or --dry-run to print the plan)")])
        steps = render(r)
        out.print(f"plan for {r.name} ({len(steps)} steps, checks not run: no --host):")
        for i, s in enumerate(steps, 1):
            first = next((ln for ln in s.apply.splitlines()[3:] if ln.strip()), "")
            pin = f"; must observe {s.fact} = {r.pins[s.pin]}" if s.fact and s.pin else ""
            out.print(f"[{i}/{len(steps)}] {s.name:<18} check, then apply if unsatisfied (timeout {s.timeout_s}s){pin}")
            out.print(f"        first apply command: {first}")
        out.print(f"then write {r.layout.manifest} and read it back")
        for path, msg in build_blockers(r):
            out.print(f"before a real build: {path}: {msg}")
        return
    if not dry_run:
        blockers = build_blockers(r)
        if blockers:
            raise UserError([Problem(r.file, p, m) for p, m in blockers])
    target = Target(host, port, user, key, known_hosts, accept_new_host_key, connect_timeout, keepalive_s=keepalive)
    runner = Runner(r, lambda: SshHost(target), report=_print_event, retries=retries, backoff_s=backoff)
    out.print(f"{'dry run of' if dry_run else 'building'} {r.name} on {user}@{host}:{port} ({len(runner.steps)} steps)")
    try:
        result = runner.build(dry_run=dry_run)
    except HostKeyRefused as exc:
        raise UserError([Problem("--known-hosts", "", str(exc))]) from None
    except SudoRefused as exc:  # found once at connect: each check would have read as "not satisfied"
        raise UserError([Problem("--user", "", str(exc))]) from None
    except paramiko.PasswordRequiredException:  # checked before connecting; kept for a key changed since
        raise UserError([Problem("--key", str(key), ENCRYPTED_KEY)]) from None
    except paramiko.AuthenticationException as exc:
        raise UserError([Problem("--key", "", f"{user}@{host}:{port} refused the key: {exc}")]) from None
    except StepFailed as exc:
        err.print(Text.assemble(("failed", "red"), f" step {exc.step} ({exc.phase}): {exc.why}"))
        if exc.result.output:
            err.print(exc.result.output, markup=False)
        err.print("fix it and re-run: finished steps are only re-checked")
        raise SystemExit(1) from None
    except ConnectionLost as exc:
        err.print(Text.assemble(("failed", "red"), f" {exc}; re-run to resume from the first unsatisfied step"))
        raise SystemExit(1) from None
    if dry_run:
        out.print(
            f"plan: {len(result.planned)} to apply ({', '.join(result.planned) or 'none'}), {len(result.satisfied)} already satisfied"
        )
        return
    if result.status == "unchanged":
        out.print(
            f"no change: all {len(result.satisfied)} steps already satisfied, manifest unchanged (sha256 {result.manifest_sha256})"
        )
    else:
        out.print(
            f"changed: applied {len(result.applied)} ({', '.join(result.applied) or 'none'}), {len(result.satisfied)} already satisfied; "
            f"manifest {'written' if result.manifest_changed else 'unchanged'} (sha256 {result.manifest_sha256})"
            + (f"; reconnected {result.reconnects}x" if result.reconnects else "")
        )
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # checked before the build; changed since
        raise UserError([Problem(dest_flag, str(dest), f"cannot create its folder: {exc.strerror}")]) from None
    from gpufleet.files import write_atomic

    write_atomic(dest, result.manifest_text, flag=dest_flag)
    out.print(f"manifest saved to {dest}")


@image_app.command("render")
def render_cmd(
    recipe: str = typer.Option(..., "--recipe", "-r", autocompletion=options.complete_recipe, help="recipe name or file"),
    out_dir: Path = typer.Option(
        ...,
        "--out-dir",
        "--out",
        parser=options.path,
        help="folder for <nn>-<step>.<phase>.sh (created; --out is the old spelling)",
        metavar="DIR",
    ),
) -> None:
    """Write a recipe's rendered step scripts (what the builder runs), e.g. for review or shellcheck.

    \b
    Examples:
      gpufleet image render --recipe cuda13-vllm --out-dir build/scripts
      shellcheck build/scripts/*.sh
    """
    from gpufleet.files import folder_problems, write_folder
    from gpufleet.images.steps import render

    if problems := folder_problems(out_dir, (), "--out-dir"):  # before the recipe is read (`-` included)
        raise UserError(problems)
    r = _recipe(recipe)
    if problems := _check_problems(r, None):  # what `image build` refuses (review F3: render wrote its scripts, exit 0)
        raise UserError(problems)
    scripts = {  # every script rendered (and the recipe checked) before anything is created
        f"{i:02d}-{s.name}.{phase}.sh": text
        for i, s in enumerate(render(r), 1)
        for phase in ("check", "apply", "cleanup")
        if (text := getattr(s, phase))
    }
    write_folder(out_dir, scripts, flag="--out-dir")  # all or nothing
    _out().print(f"wrote {len(scripts)} scripts to {one_line(str(out_dir))}")


def _images_stack(value: str) -> Path:
    """The stack file of the images program for a name (the project's images/program/Pulumi.<name>.yaml, else the
    package's example of that name: pipeline.stack_file) or a path. The name, given or the file's, must be a stack name
    (loader.bad_stack_name, as for every --stack) before any file is looked up."""
    from gpufleet.images.pipeline import stack_file
    from gpufleet.stacks.loader import bad_stack_name

    by_path = "/" in value or value.endswith(".yaml")
    if why := bad_stack_name(Path(value).stem.removeprefix("Pulumi.") if by_path else value):
        raise UserError([Problem("--stack", value if by_path else "", why)])
    return Path(value) if by_path else stack_file(value)


def _images_stacks(incomplete: str) -> list[str]:
    from gpufleet.images.pipeline import stack_names

    return [n for n in stack_names() if n.startswith(incomplete)]


@image_app.command("pipeline")
def pipeline_cmd(
    stack: str = typer.Option(
        ...,
        "--stack",
        "-s",
        "--stack-file",
        help="a stack of the images program: its name (the project's images/program/Pulumi.<name>.yaml, else an "
        "example the package ships) or its file's path",
        metavar="NAME|PATH",
        autocompletion=_images_stacks,
    ),
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
) -> None:
    """Offline preview of the images program (builder, image, copies) for one phase, under Pulumi's mock engine. The
    program is the project's images/program/ (`gpufleet init` writes it): copy the example stack file it names there as
    Pulumi.<stack>.yaml, fill in your account's values, then `pulumi up -s <stack>` in that folder (docs/images.md).

    \b
    Examples:
      gpufleet image pipeline --stack example-cuda13-vllm-alicloud
      gpufleet image pipeline -s examples/images/Pulumi.example-cuda13-vllm-alicloud.yaml --json
    """
    from gpufleet.images.pipeline import export, load_pipeline
    from gpufleet.preview import run

    stack_file = _images_stack(stack)
    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [], stack_file))
    recipe, spec, cfg = load_pipeline(stack_file)  # problems surface before the engine starts
    inv = run(lambda: export(recipe, spec, cfg), stack=stack_file.stem.removeprefix("Pulumi."), config={})
    doc = {"stack_file": str(stack_file), "phase": cfg.phase, "resources": inv.resources, "outputs": inv.outputs}
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: doc),
        table=renderers.Draw(lambda out: _print_pipeline(out, stack_file, recipe, spec, cfg, inv)),
    )


def _print_pipeline(out, stack_file: Path, recipe, spec, cfg, inv) -> None:
    from gpufleet.files import package_file

    out.print(f"images stack {stack_file.name}: recipe {recipe.name}, phase {cfg.phase}, {spec.cloud} {spec.region}")
    out.print(f"  stack file {one_line(package_file(stack_file))}")  # what to copy into images/program/ (docs/images.md)
    out.print(f"  recipe file {one_line(recipe.file)}")
    for r in inv.resources:
        out.print(f"  + {r['type']}  {r['name']}")
    for k, v in sorted(inv.outputs.items()):
        out.print(f"  output {k} = {v}")
    nxt = {
        "build": "run `gpufleet image build --host <builder_public_ip> ...`, then set phase: image and manifest_sha256",
        "image": "`pulumi up`, then `gpufleet image lock record --outputs ...`, then set phase: done and builder_instance_id",
        "done": "`pulumi up` removes the builder and its security group; the image and its copies stay",
    }[cfg.phase]
    out.print(f"next: {nxt}")


@lock_app.command("show")
def lock_show(
    fmt: str = options.fmt(FORMATS),
    as_json: bool = options.json_alias(),
    output: Path | None = options.output(),
    lock_file: Path | None = typer.Option(
        None, "--lock", parser=options.path, help="the lock file to show (as `lock record --lock`); default: images/lock.json"
    ),
) -> None:
    """Every locked image: recipe, cloud, region, image id, manifest digest, placeholder or built.

    \b
    Examples:
      gpufleet image lock show
      gpufleet image lock show --format json -o lock-rows.json
      gpufleet image lock show --lock images/lock.json
    """
    from gpufleet.stacks import lock

    path = lock_file or lock.lock_path()
    chosen = options.chosen_format(fmt, as_json, FORMATS, output, options.inputs(output, [], path if output else None))
    if lock_file is not None and not os.path.lexists(lock_file):  # named as the option (the default's absence: lock.load)
        raise UserError([Problem("--lock", str(lock_file), "no such file: give a lock file `image lock record --lock` wrote")])
    rows = lock.rows(path)
    renderers.render(
        chosen,
        output,
        json=renderers.Json(lambda: [asdict(r) for r in rows]),
        table=renderers.Draw(lambda out: out.print(_lock_table(rows))),
    )


def _lock_table(rows):
    from rich.table import Table

    t = Table()
    for col in ("recipe", "cloud", "region", "image id", "state", "manifest sha256", "pins"):
        t.add_column(col, overflow="fold")  # on a narrow terminal an id wraps onto a second line, never loses its end
    for r in rows:
        pins = ", ".join(f"{k} {v}" for k, v in r.pins.items()) or "-"
        t.add_row(
            r.recipe,
            r.cloud,
            r.region,
            r.image_id,
            "placeholder" if r.placeholder else "built",
            (r.manifest_sha256 or "-")[:16],
            pins,
        )
    return t


# An image id of a build: (cloud, region, image id).
Located = tuple[str, str, str]


def _image_args(values: list[str]) -> tuple[list[Located], list[Problem]]:
    images: list[Located] = []
    problems = []
    for v in values:
        where, sep, image_id = v.partition("=")
        cloud, slash, region = where.partition("/")
        if not sep or not slash or not image_id or not region:
            problems.append(Problem("--image", "", f"{v!r}: write CLOUD/REGION=IMAGE_ID, e.g. alicloud/cn-hangzhou=m-bp1abc"))
            continue
        images.append((cloud, region, image_id))
    return images, problems


def _output_images(path: Path) -> tuple[list[Located], list[Problem], object]:
    """Image ids from `pulumi stack output --json` of the images program (keys image:<cloud>:<region>), and its
    `manifest_sha256` output (the build manifest the images were made from; None when the file has none)."""
    from gpufleet import inputs

    try:
        doc = inputs.load_json(path, str(path), f"write them with `pulumi stack output --json > {path}`")
    except UserError as exc:
        return [], exc.problems, None
    digest = doc.get("manifest_sha256") if isinstance(doc, dict) else None
    images: list[Located] = []
    odd: list[Problem] = []
    for key, value in doc.items() if isinstance(doc, dict) else []:
        parts = key.split(":")
        if len(parts) == 3 and parts[0] == "image" and parts[2] != "synced":
            if isinstance(value, str):
                images.append((parts[1], parts[2], value))
            else:  # was skipped, and the file then said it held no image outputs
                odd.append(Problem(str(path), key, f"is {inputs.kind(value)}: an image output is the image id (text)"))
    if odd:
        return [], odd, digest
    if not images:
        return (
            [],
            [Problem(str(path), "", 'no image:<cloud>:<region> outputs: is this the images stack after its "image" phase?')],
            digest,
        )
    return images, [], digest


def _locked_images(recipe, given: list[tuple[str, list[Located]]]) -> tuple[dict[str, dict[str, str]], list[Problem]]:
    """cloud -> region -> image id of the build, from (where given: --image or the --outputs file, its image ids), and
    the problems of those ids, each named by where it was given: a region given twice, a cloud that is not
    registered, an id that is not of its cloud's form, a region of the recipe without an id (lock.image_problems)."""
    from gpufleet import registry
    from gpufleet.stacks import lock

    images: dict[str, dict[str, str]] = {}
    source: dict[str, str] = {}  # cloud/region, and cloud -> where its (first) id was given
    problems = []
    for where, found in given:
        for cloud, region, image_id in found:
            at = f"{cloud}/{region}"
            if at in source:
                first = images[cloud][region]
                problems.append(
                    Problem(where, at, f"given twice ({first} from {source[at]}, {image_id} from {where}): give each region once")
                )
                continue
            images.setdefault(cloud, {})[region] = image_id
            source[at] = where
            source.setdefault(cloud, where)
    problems += [Problem(source[c], "", why) for c in sorted(images) if (why := registry.unknown(c))]
    registered = {c: regions for c, regions in images.items() if c in registry.names()}
    # the regions no id was given for: named by what should have held them (the --outputs file when one was read:
    # a copy that failed or is still running leaves its key out), not --image alone
    files = [where for where, _ in given if where != "--image"]
    missing = f"--outputs {files[0]}" if files else "--image"
    problems += [
        Problem(source.get(at, source.get(at.split("/")[0], missing)), at, m) for at, m in lock.image_problems(recipe, registered)
    ]
    return images, problems


@lock_app.command("record")
def lock_record(
    recipe: str = typer.Option(
        ..., "--recipe", "-r", autocompletion=options.complete_recipe, help="recipe name or file that was built"
    ),
    manifest: Path = typer.Option(..., "--manifest", "-m", parser=options.path, help="the manifest `image build` brought back"),
    image: list[str] | None = typer.Option(None, "--image", help="CLOUD/REGION=IMAGE_ID, repeatable"),
    outputs: Path | None = typer.Option(
        None, "--outputs", parser=options.path, help="`pulumi stack output --json` of the images stack"
    ),
    lock_file: Path | None = typer.Option(
        None, "--lock", parser=options.path, help="the lock file to update; default: images/lock.json"
    ),
) -> None:
    """Lock a finished build: its image id in every region of the recipe, its pins and manifest digest.

    \b
    Examples:
      gpufleet image lock record -r cuda13-vllm -m build/images/cuda13-vllm-203.0.113.7.manifest.json --outputs images.json
      gpufleet image lock record -r cuda13-vllm -m manifest.json --image alicloud/cn-hangzhou=m-bp1abc
    """
    import hashlib

    from gpufleet import inputs
    from gpufleet.files import output_problems
    from gpufleet.images import facts
    from gpufleet.images.steps import step_digest_problems
    from gpufleet.stacks import lock

    r = _recipe(recipe)
    path = lock_file or lock.lock_path()
    # the project's lock: the first record makes its images/ folder too (lock.record)
    problems = output_problems(path, flag="--lock", reads=(manifest, outputs), make_folders=lock.is_project_lock(path))
    text = ""
    try:
        text = inputs.read_text(
            manifest, str(manifest), "cannot read the build manifest (`gpufleet image build --manifest-out FILE` writes it)"
        )
        doc = inputs.mapping(inputs.parse_json(text, str(manifest)), str(manifest), "", "a build manifest (a JSON object)")
        problems += [Problem(str(manifest), w, m) for w, m in lock.manifest_problems(r, doc)]
        problems += [Problem(str(manifest), w, m) for w, m in facts.observed_problems(r, doc.get("observed", {}))]
        problems += [Problem(str(manifest), w, m) for w, m in step_digest_problems(r, doc.get("steps"))]
    except UserError as exc:
        problems += exc.problems
    given: list[tuple[str, list[Located]]] = []
    unread = False  # the --outputs file could not be read: the ids it holds are not known missing
    if outputs is not None:
        found_ids, found, made_from = _output_images(outputs)
        given.append((str(outputs), found_ids))
        problems += found
        unread = bool(found)
        if made_from is not None and made_from != hashlib.sha256(text.encode()).hexdigest() and text:
            shown = f"{made_from[:16]}…" if isinstance(made_from, str) else inputs.kind(made_from)
            problems.append(
                Problem(
                    str(outputs),
                    "manifest_sha256",
                    f"the images were made from the build whose manifest has sha256 {shown}, not {manifest}: give that "
                    "build's manifest with --manifest, or set the images stack's manifest_sha256 to this one's and make "
                    "the images again",
                )
            )
    found_ids, found = _image_args(image or [])
    given.append(("--image", found_ids))
    problems += found
    images, found = _locked_images(r, given)
    problems += [p for p in found if not (unread and p.path == "images")]  # "images": lock.image_problems' missing ids
    if problems:
        raise UserError(problems)
    digest = hashlib.sha256(text.encode()).hexdigest()
    lock.record(
        r.name,
        r.pins,
        images,
        digest,
        path,
        flag="--lock",
        waiting=lambda guard: _err().print(f"waiting for another `image lock record` to finish (it holds {guard})"),
    )
    n = sum(len(v) for v in images.values())
    _out().print(f"locked {r.name}: {n} images, manifest sha256 {digest[:16]}…, in {path}")


def main(argv: list[str] | None = None) -> None:
    """`python -m gpufleet.cli.image ...`: the image commands alone (same errors and exit codes as `gpufleet image`)."""
    import sys

    app = typer.Typer(rich_markup_mode=None, add_completion=False)
    register(app)
    try:
        rc = app(args=["image", *(sys.argv[1:] if argv is None else argv)], standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except UserError as exc:
        print_problems(exc.problems, _err())
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
