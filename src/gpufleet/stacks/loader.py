"""Load and validate stacks/Pulumi.<stack>.yaml into a resolved Fleet, collecting every problem.

Order: YAML -> the `gpufleet:fleet` key -> catalog facts on the raw data (cloud, region, zones, GPU)
-> the pydantic model -> checks across fields -> image and sizing checks. All problems found are
raised together as one UserError; nothing is registered when there is any.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from msgspec import Struct
from msgspec.structs import replace
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from gpufleet import contract, inputs, registry
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.naming import group_prefix
from gpufleet.stacks import catalog, rollout
from gpufleet.stacks.lock import image_for, unrecorded_problem
from gpufleet.stacks.project import project_root, recipe_stamp
from gpufleet.stacks.spec import Environment, FleetSpec

CONFIG_KEY = "gpufleet:fleet"
USAGE_KEY = "gpufleet:usage"  # the stack's usage profile, read by gpufleet.cost.usage
# The `gpufleet:` keys of a stack file's `config:` that gpufleet reads; any other `gpufleet:` key is refused with a
# did-you-mean (a misspelt key would otherwise be skipped silently), except the Pulumi secret config keys the fleet
# names for its TLS PEM pair (load_balancer.tls.certificate_config / private_key_config). Other namespaces
# (alicloud:, tencentcloud:, pulumi:, gpufleet-images:) belong to their readers.
CONFIG_KEYS = {CONFIG_KEY: "the fleet spec", USAGE_KEY: "the usage profile `gpufleet cost` reads"}
NAMESPACE = "gpufleet:"
# A stack file is configuration, not data: the shipped ones are 1-2 KiB, and a PEM pair held as Pulumi secrets adds a
# few KiB. Larger files are refused before parsing. gpufleet's own cap (Pulumi documents none).
MAX_STACK_BYTES = 1024 * 1024


class Fleet(Struct, frozen=True):
    """A validated spec with what it resolves to (instance type, GPU facts, image)."""

    stack: str
    file: str
    spec: FleetSpec
    instance_type: catalog.InstanceType
    gpu: catalog.GpuKind
    image_id: str
    image_pins: dict
    subnets: tuple[str, ...]
    image_placeholder: bool = False  # images/lock.json marks the entry a placeholder: no image was built yet
    # A rollout's candidate group, resolved: its spec is stacks/rollout.candidate_spec (the finished spec at the
    # candidate's present size), so its group is declared exactly as the fleet's main group after `rollout finish`.
    candidate: Fleet | None = None

    @property
    def prefix(self) -> str:
        """The logical prefix of the fleet's shared resources (network, security, role, load balancer, alarms)."""
        return f"{self.spec.name}-{self.spec.environment}"

    @property
    def group_prefix(self) -> str:
        """The logical prefix of the serving group's resources: <name>-<label>-<environment> with fleet.label, else
        the prefix (names without a label are the names before issue 31)."""

        return group_prefix(self.spec)

    def serving_groups(self) -> list[tuple[Fleet, int]]:
        """(the group's fleet, its per-node backend weight) of each serving group: the fleet's own, then a rollout's
        candidate (stacks/rollout.py derives the weights). Without a rollout: the fleet itself, rollout.DEFAULT_WEIGHT."""

        if self.spec.rollout is None or self.candidate is None:
            return [(self, rollout.DEFAULT_WEIGHT)]

        current, candidate = rollout.weights(self.spec)
        return [(replace(self, spec=rollout.current_spec(self.spec), candidate=None), current), (self.candidate, candidate)]


# Pulumi stack names: letters, digits, '-', '_' and '.', 1 to 100 characters (pulumi/pulumi, pkg/backend/.../
# validateStackName: stackNameAndProjectRegexp = ^[A-Za-z0-9_.-]{1,100}$; docs: "Stack names may only contain
# alphanumeric characters, hyphens, underscores, or periods"). gpufleet also puts the name in a file
# name, stacks/Pulumi.<name>.yaml: it must start with a letter or digit (not '.', '..' or '-x'), and never hold '/'.
STACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def bad_stack_name(name: str) -> str | None:
    """Why `name` cannot be a stack name (and a file name under stacks/); None when it can. Checked before any file
    is looked up by it (a name longer than a file name can be is an OSError there)."""
    if STACK_NAME.fullmatch(name) and ".." not in name:
        return None
    return (
        f"{name[:60]!r}{'…' if len(name) > 60 else ''} is not a stack name: 1-100 letters, digits, '-', '_' or '.', "
        "starting with a letter or digit, no '..' (e.g. alicloud-cn-beijing-dev)"
    )


# The stack file of a stack kept outside the project's stacks/, for the program Pulumi runs: `pulumi up --config-file
# FILE` gives the engine the file's config but the program (stacks/__main__.py, load_fleet) reads the stack file itself,
# which it would look for in stacks/. `gpufleet rollout` sets it for the `pulumi up` it runs and prints it in the
# command it prints (rollout/deploy.py); a value whose file is not Pulumi.<stack>.yaml of the stack loaded is ignored.
STACK_FILE_ENV = "GPUFLEET_STACK_FILE"


def stack_path(stack: str, root: Path | None = None) -> Path:
    if stack not in _STACK_FILES and (given := os.environ.get(STACK_FILE_ENV)) and Path(given).name == f"Pulumi.{stack}.yaml":
        use_stack_file(Path(given), STACK_FILE_ENV)  # checked as --stack PATH is
    return _STACK_FILES.get(stack) or (root or project_root()) / "stacks" / f"Pulumi.{stack}.yaml"


# stack name -> a stack file given by path outside the project's stacks/ (gpufleet/cli/options.py --stack PATH)
_STACK_FILES: dict[str, Path] = {}


def use_stack_file(path: Path, flag: str = "--stack") -> str:
    """The stack name of a stack file given by path (`Pulumi.<name>.yaml`, by `flag`); a file outside the project's
    stacks/ folder is read from where it is under that name (usage profile and image lock stay the project's)."""
    name = path.name[len("Pulumi.") : -len(".yaml")] if path.name.startswith("Pulumi.") and path.name.endswith(".yaml") else ""
    if not name:
        raise UserError([Problem(flag, str(path), "a stack file is named Pulumi.<name>.yaml; give such a file or a stack name")])
    if why := bad_stack_name(name):
        raise UserError([Problem(flag, str(path), f"{why}; rename the file Pulumi.<name>.yaml")])
    if bad := inputs.link_problem(path):
        raise UserError([Problem(flag, str(path), bad.message)])
    if not os.path.isfile(path):  # Path.is_file raises on a folder name of > 255 bytes (ENAMETOOLONG)
        what = "is a folder, not a file" if os.path.isdir(path) else "no such file"
        raise UserError([Problem(flag, str(path), f"{what}: give an existing stack file or a stack name")])
    try:
        # the folder the file is in, as given: a link elsewhere to a file of stacks/ is read where it is under its own
        # name (resolving the link first took it for the file of stacks/ named like the link, which is not there)
        inside = path.absolute().parent.resolve() == (project_root() / "stacks").resolve()
    except UserError:
        inside = False  # no project here: the file is read from where it is
    if not inside:
        _STACK_FILES[name] = path.resolve()
    return name


def stack_arg(stack: str, file: Path | None = None, root: Path | None = None) -> str:
    """What `--stack` takes for `stack` in a command a message tells the user to run, shell-quoted: its name for a
    stack file of the project's stacks/ (`root`'s, when given with its `file`), else the path of its file (the name
    alone would be looked up in stacks/: "no such stack file"). Without `file`, the file given by path, if any."""
    path = file or _STACK_FILES.get(stack)
    inside = path is None or (root is not None and path.resolve().parent == (root / "stacks").resolve())
    return shlex.quote(stack if inside else str(path))


def stack_names(root: Path | None = None) -> list[str]:
    folder = (root or project_root()) / "stacks"
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def read_stack_config(stack: str, root: Path | None = None) -> tuple[str, dict]:
    """(display file name, the whole `config:` mapping) of a stack file."""
    path = stack_path(stack, root)
    shown = str(path) if stack in _STACK_FILES else f"stacks/{path.name}"
    if why := bad_stack_name(stack):  # a file of stacks/ (cost report --all, check) whose name no command takes
        raise UserError([Problem(shown, "", f"{why}; rename the file Pulumi.<name>.yaml")])
    if bad := inputs.link_problem(path, shown):  # a link in stacks/ is listed by stack_names: not "did you mean" itself
        raise UserError([bad])
    if not path.exists():
        raise UserError([no_such_stack(shown, stack, stack_names(root))])
    return shown, read_config(path, shown)


def no_such_stack(shown: str, stack: str, known: list[str], what: str = "stack file") -> Problem:
    """The problem of a stack name with no file, naming the nearest stacks (the main program's and the images
    program's stacks alike)."""
    return Problem(shown, "", f"no such {what}" + did_you_mean(stack, known))


def read_config(path: Path, shown: str) -> dict:
    """The `config:` mapping of a Pulumi stack file, or a UserError naming the file and what is wrong.

    Parsed once per process while the file is unchanged; callers must not modify the mapping (copy it)."""
    try:
        st = path.stat()
    except OSError:
        return _parse_config(path, shown)  # the reader names what is wrong with the path
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _CONFIGS:
        _CONFIGS[key] = _parse_config(path, shown)
    return _CONFIGS[key]


_CONFIGS: dict[tuple, dict] = {}


# The attributes of a Pulumi stack settings file (pulumi.com/docs/iac/concepts/projects/stack-settings-file,
# "Attributes", read 2026-12-05); another top-level key is a typo (a misspelt `config:` would hide every setting).
STACK_ATTRIBUTES = ("secretsprovider", "encryptedkey", "encryptionsalt", "config", "environment")


# A top-level key a message names: one a stack file could hold misspelt. Others (a line of another file read as a key:
# `root:$6$...:20228:...` of /etc/shadow through a link) are counted, never shown (review F6).
_ATTRIBUTE_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")
SHOWN_UNKNOWN = 3  # unknown top-level keys named, at most; the rest are counted


def attribute_problems(doc: dict, shown: str) -> list[Problem]:
    """The top-level keys of a stack file that are not attributes of one: at most SHOWN_UNKNOWN named (those shaped
    like a key, with "did you mean"), then how many more; a file none of whose keys is an attribute, or near one, is
    not a stack file, said once (another YAML file given or linked as one)."""
    unknown = [k for k in doc if k not in STACK_ATTRIBUTES]
    if not unknown:
        return []
    named = [k for k in unknown if isinstance(k, str) and _ATTRIBUTE_LIKE.fullmatch(k)]
    near = {k: why for k in named if (why := did_you_mean(k, STACK_ATTRIBUTES)).startswith(" (did you mean")}
    attributes = ", ".join(STACK_ATTRIBUTES)
    if len(unknown) == len(doc) and not near:
        return [
            Problem(
                shown,
                "",
                f"is not a Pulumi stack file: {f'none of its {len(doc)} top-level keys is' if len(doc) > 1 else 'its one top-level key is not'} "
                f"an attribute of one ({attributes}); give a stack file, its settings under `config:`",
            )
        ]
    named = sorted(named, key=lambda k: k not in near)[:SHOWN_UNKNOWN]  # the near misses first
    out = [
        Problem(shown, k, "not an attribute of a Pulumi stack file" + (near.get(k) or f" (choose one of: {attributes})"))
        for k in named
    ]
    if rest := len(unknown) - len(named):
        keys = f"{rest} more top-level keys" if named else f"{rest} top-level keys"
        keys = keys.removesuffix("s") if rest == 1 else keys
        out.append(
            Problem(
                shown,
                "",
                f"{'and ' if named else ''}{keys} not {'an attribute' if rest == 1 else 'attributes'} of a Pulumi stack "
                f"file ({attributes}): remove {'it' if rest == 1 else 'them'}",
            )
        )
    return out


def _parse_config(path: Path, shown: str) -> dict:
    doc = inputs.load_yaml(path, shown, max_bytes=MAX_STACK_BYTES)
    if isinstance(doc, dict) and (unknown := attribute_problems(doc, shown)):
        raise UserError(unknown)
    if not isinstance(doc, dict):
        raise UserError([Problem(shown, "", f"is {inputs.kind(doc)}: a Pulumi stack file is a mapping with `config:` in it")])
    config = doc.get("config")
    if config is None:  # `config:` with nothing under it (null) was said to be missing
        what = "is empty" if "config" in doc else "missing"
        raise UserError([Problem(shown, "config", f"{what}: a Pulumi stack file holds its settings under `config:`")])
    if not isinstance(config, dict):
        raise UserError([Problem(shown, "config", f"is {inputs.kind(config)}: it must be a mapping of setting names to values")])
    if problems := config_key_problems(config, shown) + plaintext_secret_problems(config, shown):
        raise UserError(problems)
    return config


def pulumi_config_key(key: object) -> bool:
    """Whether Pulumi reads `key` of a stack file's `config:` as a config key. Pulumi's rule (pulumi/pulumi,
    sdk/go/common/resource/config/key.go, ParseKey, as pkg/resource/config/key.go had it): "Keys can take on of two
    forms: <namespace>:<name> (the preferred form); <namespace>:config:<name> (compat with an old requirement that
    every config value be in the "config" module). Where <namespace> and <name> may be any string of characters,
    excluding ':'." Anything else is "could not parse %s as a configuration key (configuration keys should be of the
    form `<namespace>:<name>`)", and `pulumi preview` / `up` refuse the stack file. (The second form is a module member
    token, tokens.ParseModuleMember: read here as three parts, none empty, the middle one `config`.)"""
    if not isinstance(key, str):  # true: 1 is the key "true" to Pulumi's YAML reader: no ':' in it
        return False
    parts = key.split(":")
    return len(parts) == 2 or (len(parts) == 3 and parts[1] == "config" and all(parts))


def _yaml_key(key: object) -> str:
    """A mapping key as the YAML text that wrote it (true, null, 1), not Python's (True, None)."""
    return "null" if key is None else str(key).lower() if isinstance(key, bool) else str(key)


def config_key_problems(config: dict, shown: str) -> list[Problem]:
    """A key of a stack file's `config:` that Pulumi cannot parse (pulumi_config_key), and an unknown `gpufleet:` key,
    each with the key it is closest to (see CONFIG_KEYS)."""
    known = {**CONFIG_KEYS, **_tls_config_keys(config.get(CONFIG_KEY))}
    out = []
    parsed = [k for k in config if pulumi_config_key(k)]
    for key in config:
        if not pulumi_config_key(key):
            near = did_you_mean(_yaml_key(key), [*known, *parsed])
            example = next((k for k in parsed if not k.startswith(NAMESPACE)), "alicloud:region")  # the file's own
            out.append(
                Problem(
                    shown,
                    f"config.{_yaml_key(key)}",
                    "not a Pulumi config key (Pulumi refuses the stack file): write <namespace>:<name>, e.g. "
                    f"{example} or {CONFIG_KEY}" + (near if near.startswith(" (did you mean") else ""),
                )
            )
        elif key.startswith(NAMESPACE) and key not in known:
            out.append(
                Problem(
                    shown,
                    f"config.{key}",
                    "unknown gpufleet config key; remove it or check its spelling"
                    + did_you_mean(key, known)  # the TLS keys the fleet names too: gpufleet:tlsKee is gpufleet:tlsKey
                    + f" ({'; '.join(f'{k}: {what}' for k, what in known.items())})",
                )
            )
    return out


# What marks a PEM private key (-----BEGIN PRIVATE KEY-----, RSA / EC / ENCRYPTED / OPENSSH ... PRIVATE KEY-----).
PEM_PRIVATE_KEY = "PRIVATE KEY-----"
COMMITTED = "it would be committed with the stack file"


def written(value: Any) -> str:
    """A config value as a message names it: text and numbers as written, a secret as one (never its ciphertext or a
    Python dict), anything else by its kind."""
    return "a secret (secure: ...)" if is_secret(value) else inputs.given(value)


def is_secret(value: Any) -> bool:
    """Pulumi's form of an encrypted config value in a stack file: {secure: <ciphertext>}, nothing else."""
    return isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str) and bool(value["secure"])


def plaintext_secret_problems(config: dict, shown: str) -> list[Problem]:
    """Credentials a stack file's `config:` holds as plain text, not Pulumi's `secure:` form (the file is committed,
    and a rollout rewrites and keeps it): a provider's credential keys (each registered cloud's
    profile.provider_credentials), the key load_balancer.tls.private_key_config names, and a PEM private key in any
    value (a certificate chain with its key appended, `cat fullchain.pem privkey.pem`). Each is named, never quoted."""
    tls = _raw_tls(config.get(CONFIG_KEY))
    cert_key, private_key = tls.get("certificate_config"), tls.get("private_key_config")
    credentials: dict[str, dict[str | None, str]] = {}  # config key -> field (None: the value itself) -> elsewhere
    for cloud in registry.names():
        for name, elsewhere in registry.profile(cloud).provider_credentials.items():
            key, _, field = name.partition(".")
            credentials.setdefault(f"{cloud}:{key}", {})[field or None] = elsewhere
    out = []
    for key, value in config.items():
        if not isinstance(key, str) or value is None or is_secret(value):
            continue
        where = f"config.{key}"
        if key in credentials:
            plain = _plain_credentials(value, credentials[key])
            out += [
                Problem(
                    shown,
                    where + (f".{field}" if field else ""),
                    f"holds a credential as plain text: {COMMITTED}; remove it and "
                    + (f"give it in {elsewhere} where pulumi runs, or " if elsewhere else "")
                    + f"encrypt it: `pulumi config set --secret {'--path ' if field else ''}"
                    f"{shlex.quote(key + ('.' + field if field else ''))}`",
                )
                for field, elsewhere in plain
            ]
            if plain:
                continue
        if key == private_key and isinstance(value, str):
            out.append(
                Problem(
                    shown,
                    where,
                    f"holds the private key (load_balancer.tls.private_key_config names it) as plain text: "
                    f'{COMMITTED}; remove it and store it with `pulumi config set --secret {key} -- "$(cat privkey.pem)"`',
                )
            )
            continue
        for path in _private_keys(value, where):
            if key == cert_key and path == where:
                fix = (
                    f'keep only the certificate chain here (`pulumi config set {key} -- "$(cat fullchain.pem)"`) and the key '
                    "under the key load_balancer.tls.private_key_config names, as a secret"
                    + (f' (`pulumi config set --secret {private_key} -- "$(cat privkey.pem)"`)' if private_key else "")
                )
            else:
                fix = f"remove it, or encrypt the value: `pulumi config set --secret {key}`"
            out.append(Problem(shown, path, f"holds a PEM private key as plain text: {COMMITTED}; {fix}"))
    return out


def _plain_credentials(value: Any, fields: dict[str | None, str]) -> list[tuple[str | None, str]]:
    """The (field, elsewhere) of a provider config value that hold a credential as plain text: the value itself
    (field None), or fields of an object setting given as a mapping (each may be `secure:`) or as JSON text."""
    out: list[tuple[str | None, str]] = []
    if None in fields and value not in ("", {}, []):
        out.append((None, fields[None]))
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return out
    if isinstance(value, dict):
        for field, elsewhere in fields.items():
            held = value.get(field) if field is not None else None
            if held not in (None, "") and not is_secret(held):
                out.append((field, elsewhere))
    return out


def _private_keys(value: Any, where: str) -> list[str]:
    """The paths under `where` of plain text holding a PEM private key (a `secure:` value is skipped)."""
    if isinstance(value, str):
        return [where] if PEM_PRIVATE_KEY in value else []
    if isinstance(value, dict) and not is_secret(value):
        return [p for k, v in value.items() for p in _private_keys(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _private_keys(v, f"{where}.{i}")]
    return []


def _raw_tls(fleet: Any) -> dict:
    """The raw fleet's load_balancer.tls mapping ({} when it has none, or it is not a mapping)."""
    lb = fleet.get("load_balancer") if isinstance(fleet, dict) else None
    tls = lb.get("tls") if isinstance(lb, dict) else None
    return tls if isinstance(tls, dict) else {}


def _tls_config_keys(fleet: Any) -> dict[str, str]:
    """The Pulumi config keys the raw fleet names for its TLS PEM pair (they hold secrets the program reads), with
    the field that names each."""
    tls = _raw_tls(fleet)
    return {
        v: f"the TLS PEM that load_balancer.tls.{k} names"
        for k in ("certificate_config", "private_key_config")
        if isinstance(v := tls.get(k), str)
    }


Check = Callable[["Fleet"], list[tuple[str, str]]]  # a check of a resolved fleet: (field, message) per problem


def load_fleet(stack: str, root: Path | None = None, checks: tuple[Check, ...] = ()) -> Fleet:
    """The stack file's fleet, parsed and validated once per process while the file is unchanged (preview runs the
    program, which loads the stack again as under `pulumi up`; cost and sizing ask too).

    This layer validates what the spec, the catalog, the clouds' rules and the image lock say; the checks that need
    the engines above it (image recipes, sizing) are passed in by gpufleet.validation, which callers use."""
    path = stack_path(stack, root)
    try:
        st = path.stat()
        lock = (root or project_root()) / "images" / "lock.json"  # the fleet's image is resolved from it
        ls = lock.stat() if lock.exists() else None
        key = (str(path.resolve()), st.st_mtime_ns, st.st_size, checks, ls and (ls.st_mtime_ns, ls.st_size))
    except OSError:
        key = None
    if key is not None and key in _FLEETS:
        fleet, recipes = _FLEETS[key]
        if recipes is not None and recipe_stamp(recipes[0]) == recipes[1]:  # validated against these very recipes
            return fleet
    shown, config = read_stack_config(stack, root)
    raw = config.get(CONFIG_KEY)
    if raw is None:
        what = "is empty" if CONFIG_KEY in config else "missing"
        raise UserError([Problem(shown, f"config.{CONFIG_KEY}", f"{what}: put the fleet spec under this key (see README)")])
    if not isinstance(raw, dict):
        raise UserError(
            [Problem(shown, f"config.{CONFIG_KEY}", f"is {inputs.kind(raw)}: the fleet spec is a mapping (cloud:, region:, ...)")]
        )
    named = stack_name_problems(stack, config, raw, shown)
    try:
        fleet = validate(raw, stack=stack, file=shown, checks=checks)
    except UserError as exc:
        raise UserError(named + exc.problems) from None
    if named:
        raise UserError(named)
    if key is not None:
        names = _recipe_names(fleet.spec)
        stamp = recipe_stamp(names)
        _FLEETS[key] = (fleet, None if stamp is None else (names, stamp))
    return fleet


# (resolved stack file, mtime, size, checks, lock) -> its validated fleet, with the recipes it was validated against:
# their names and project.recipe_stamp (the recipe folders, each file's path and stat), checked on each hit, so that a
# project recipe added, edited or removed (or another project's, by GPUFLEET_PROJECT or the current folder) is seen
_FLEETS: dict[tuple, tuple[Fleet, tuple[list[str], tuple] | None]] = {}


def _recipe_names(spec: Any) -> list[str]:
    """The image recipes a spec names: its image's, and a rollout candidate's."""
    rollout = getattr(spec, "rollout", None)
    candidate = getattr(getattr(getattr(rollout, "candidate", None), "image", None), "recipe", None)
    return [spec.image.recipe] + ([candidate] if isinstance(candidate, str) and candidate != spec.image.recipe else [])


def stack_name_problems(stack: str, config: dict, raw: dict, shown: str) -> list[Problem]:
    """A stack file that says two things: its name follows `<cloud>-<region>-<environment>[-<fleet>]` (as `gpufleet
    region new` names it) for another cloud, region or environment than its fleet's, or its provider's `<cloud>:region` setting
    names another region than `fleet.region` (the program deploys to fleet.region). Both are the traces of a stack
    copied for a new region or environment and edited in one place only. A stack named otherwise is not checked."""
    cloud, region, env = (raw.get(k) for k in ("cloud", "region", "environment"))
    if not all(isinstance(v, str) for v in (cloud, region, env)):
        return []  # the spec's own validation names these fields
    out = []
    provider = config.get(f"{cloud}:region")
    if provider is not None and provider != region:
        out.append(
            Problem(
                shown,
                f"config.{cloud}:region",
                f"is {written(provider)} but fleet.region is {region!r}: the program deploys to fleet.region; set both to the "
                "same region (or remove this key)",
            )
        )
    named = named_triple(stack)
    if named is not None and named != (cloud, region, env):
        said = ", ".join(
            f"{what} {n}" for what, n, f in zip(("cloud", "region", "environment"), named, (cloud, region, env)) if n != f
        )
        out.append(
            Problem(
                shown,
                "fleet",
                f"the stack's name {stack!r} says {said}, its fleet is {cloud} {region} {env}: a stack named "
                f"<cloud>-<region>-<environment> holds that fleet; rename the file to Pulumi.{cloud}-{region}-{env}.yaml "
                "or correct fleet.cloud / region / environment",
            )
        )
    return out


def named_triple(stack: str) -> tuple[str, str, str] | None:
    """(cloud, region, environment) of a stack named as `gpufleet region new` names one, `<registered cloud>-<region>-
    <dev|staging|prod>` with an optional `-<fleet name>` (any suffix), else None."""
    clouds = "|".join(re.escape(c) for c in registry.names())
    envs = "|".join(get_args(Environment))
    m = re.fullmatch(rf"({clouds})-(.+?)-({envs})(?:-.+)?", stack)
    return (m[1], m[2], m[3]) if m else None


def validate(raw: dict[str, Any], stack: str, file: str, checks: tuple[Check, ...] = ()) -> Fleet:
    """The spec as a Fleet, or UserError with every problem (checks: run on the resolved fleet, see load_fleet)."""
    if over := cap_problems(raw):  # before anything walks the lists: 10,000 schedules fail at once
        raise UserError([Problem(file, p, m) for p, m in over])
    problems: list[Problem] = [Problem(file, p, m) for p, m in catalog_problems(raw)]
    spec = None
    try:
        spec = FleetSpec.model_validate(raw)
    except ValidationError as exc:
        problems += [Problem(file, _loc(e), _msg(e)) for e in exc.errors()]
    if spec is not None and not problems:
        problems += [
            Problem(file, p, m) for p, m in cross_problems(spec) + registry.spec_problems(spec) + contract.spec_problems(spec)
        ]
    fleet = None
    if spec is not None and not problems:
        fleet = _resolve(spec, stack, file, problems)
    if fleet is not None and not problems and spec is not None and spec.rollout is not None:
        fleet = _with_candidate(fleet, problems)
    if fleet is not None and not problems:
        for check in checks:
            own = check(fleet)
            problems += [Problem(file, p, m) for p, m in own]
            if fleet.candidate is not None:
                problems += [Problem(file, candidate_field(p), m) for p, m in check(fleet.candidate) if (p, m) not in own]
    if problems or fleet is None:  # every path that leaves fleet None has added a problem
        raise UserError(problems)
    return fleet


CANDIDATE_FIELDS = ("label", "model", "image", "serving", "gpu", "replicas")


def candidate_field(path: str) -> str:
    """A problem of the candidate group's spec, shown at the rollout.candidate field it comes from."""
    head = path.removeprefix("fleet.").split(".", 1)[0]
    return "fleet.rollout.candidate." + path.removeprefix("fleet.") if head in CANDIDATE_FIELDS else path


def _with_candidate(fleet: Fleet, problems: list[Problem]) -> Fleet | None:
    """The fleet with its rollout's candidate group resolved; the finished spec (what `rollout finish` leaves) is
    validated like any fleet, so a candidate that could not become the fleet is refused before it is deployed."""

    spec = fleet.spec
    try:
        done = rollout.finished(spec)
    except ValidationError as exc:
        problems += [Problem(fleet.file, candidate_field(_loc(e)), _msg(e)) for e in exc.errors()]
        return None
    after = " (the fleet after `rollout finish`)"
    found = [Problem(fleet.file, candidate_field(p), m + after) for p, m in catalog_problems(done.model_dump(mode="json"))]
    found += [
        Problem(fleet.file, candidate_field(p), m + after)
        for p, m in ([] if found else cross_problems(done) + registry.spec_problems(done) + contract.spec_problems(done))
    ]
    problems += found
    if found:
        return None
    group = _resolve(rollout.candidate_spec(spec), fleet.stack, fleet.file, found)
    problems += [Problem(x.file, candidate_field(x.path), x.message) for x in found]
    return None if group is None else replace(fleet, candidate=group)


def _loc(error: ErrorDetails) -> str:
    """The field of a spec error as the file writes it: a key that is not text (`null: x`, which pydantic names 'None',
    and `true: 1`, which it names 1) as YAML wrote it (review F13: fleet.None)."""
    loc = tuple(error["loc"])
    if error["type"] == "invalid_key" and loc:
        loc = (*loc[:-1], _yaml_key(error["input"]))
    return "fleet." + ".".join(_yaml_key(part) for part in loc) if loc else "fleet"


def _msg(error: ErrorDetails) -> str:
    return inputs.model_error(error, _suggest(error["loc"]) if error["type"] == "extra_forbidden" else "")


def _suggest(loc: tuple) -> str:
    """' (did you mean X?)' for a misspelt key: the fields of the model at loc's parent."""
    model: Any = FleetSpec
    for part in loc[:-1]:
        if isinstance(part, int):  # an item of a list: the list's item model is already unwrapped below
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return ""
        model = field.annotation
        model = next((a for a in getattr(model, "__args__", ()) if hasattr(a, "model_fields")), model)
    fields = getattr(model, "model_fields", None)
    if not fields:
        return ""
    close = did_you_mean(str(loc[-1]), fields)
    return close if "did you mean" in close else ""


def cap_problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """Lists (and mappings) of the raw spec longer than the cloud's quota allows (registry.list_caps), naming the quota.

    With a cloud that is not registered (reported by catalog_problems) a list is held to the widest cap of any cloud,
    so that no input walks a list of millions; zones are held to the region's zones by catalog_problems."""
    cloud = raw.get("cloud")
    clouds = [cloud] if isinstance(cloud, str) and cloud in registry.names() else list(registry.names())
    caps: dict[str, registry.ListCap] = {}
    for name in clouds:
        for path, cap in registry.list_caps(name).items():
            if path not in caps or cap.most > caps[path].most:
                caps[path] = cap
    out = []
    for path, cap in caps.items():
        value: Any = raw
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (list, dict)) and len(value) > cap.most:
            fix = f"keep at most {cap.most}" + (f" ({cap.fix})" if cap.fix else "")
            out.append((f"fleet.{path}", f"{len(value)} given; {cap.quota}: {fix}"))
    return out


def catalog_problems(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """Cloud, region, zones and GPU kind against the catalog, on the raw data (runs even if the model fails)."""
    out: list[tuple[str, str]] = []
    cloud = raw.get("cloud")
    if cloud is None or not isinstance(cloud, str):
        return out  # missing or not text: reported once, by the model
    if cloud not in catalog.clouds():
        out.append(("fleet.cloud", f"unknown cloud {cloud!r}" + did_you_mean(str(cloud), catalog.clouds())))
        return out
    gpu = (raw.get("gpu") or {}).get("kind") if isinstance(raw.get("gpu"), dict) else None
    kinds = catalog.gpu_kinds()
    if not isinstance(gpu, str):
        gpu = None
    elif gpu not in kinds:
        out.append(("fleet.gpu.kind", f"unknown GPU kind {gpu!r}" + did_you_mean(str(gpu), kinds)))
        gpu = None
    regions = catalog.regions(cloud)
    region = raw.get("region")
    if not isinstance(region, str):
        return out
    if region not in regions:
        out.append(("fleet.region", f"unknown {cloud} region {region!r}" + did_you_mean(str(region), regions)))
        return out
    zones = raw.get("zones")
    if not isinstance(zones, list):
        zones = []
    if len(zones) > len(regions[region]):
        out.append(
            (
                "fleet.zones",
                f"{len(zones)} given; {region} has {len(regions[region])} zones in the catalog "
                f"({', '.join(regions[region])}): name each at most once",
            )
        )
        return out
    for i, zone in enumerate(zones):
        if isinstance(zone, str) and (why := catalog.zone_problem(cloud, region, zone, gpu)):
            out.append((f"fleet.zones.{i}", why))
    if gpu and not any(gpu in k for k in regions[region].values()):
        elsewhere = catalog.regions_selling(cloud, gpu)
        out.append(("fleet.gpu.kind", f"{cloud} sells no {gpu} in {region}; regions that do: {', '.join(elsewhere) or 'none'}"))
    return out


def cross_problems(spec: FleetSpec) -> list[tuple[str, str]]:
    out = rollout_problems(spec)
    if spec.environment == "prod":
        if len(spec.zones) < 2:
            out.append(("fleet.zones", "prod needs at least 2 zones so that one zone outage leaves capacity"))
        if spec.replicas.min < 2:
            out.append(("fleet.replicas.min", f"prod needs at least 2 (is {spec.replicas.min})"))
        if spec.load_balancer.public and not spec.serving.api_key_secret:
            out.append(
                (
                    "fleet.serving.api_key_secret",
                    "prod with a public load balancer needs an API key: name the secret that holds it "
                    "(or set load_balancer.public: false)",
                )
            )
    if spec.environment == "prod" and spec.load_balancer.public and spec.load_balancer.tls is None:
        out.append(
            (
                "fleet.load_balancer.tls",
                "prod refuses plain HTTP from the internet: set load_balancer.tls with domain and certificate_id (or "
                "certificate_config + private_key_config), or set load_balancer.public: false (docs/tls.md)",
            )
        )
    if spec.serving.gateway.read_timeout_s < spec.load_balancer.request_timeout_s:
        out.append(
            (
                "fleet.serving.gateway.read_timeout_s",
                f"{spec.serving.gateway.read_timeout_s} is below load_balancer.request_timeout_s "
                f"({spec.load_balancer.request_timeout_s}): the gateway would cut requests the load balancer still waits for",
            )
        )
    if spec.serving.tensor_parallel_size > spec.gpu.count:
        out.append(
            ("fleet.serving.tensor_parallel_size", f"{spec.serving.tensor_parallel_size} exceeds gpu.count ({spec.gpu.count})")
        )
    billing = spec.billing
    if billing.model == "spot" and spec.environment == "prod" and billing.base < spec.replicas.min:
        out.append(
            (
                "fleet.billing.on_demand_base",
                f"prod with spot needs at least replicas.min ({spec.replicas.min}) pay-as-you-go nodes under the spot ones "
                f"(is {billing.base}), or one spot reclaim can take every node: set billing.on_demand_base: {spec.replicas.min}",
            )
        )
    hc = spec.load_balancer.health_check
    drain = hc.interval_s * hc.unhealthy_threshold + spec.serving.gateway.read_timeout_s
    if spec.autoscaling.drain_timeout_s < drain:
        out.append(
            (
                "fleet.autoscaling.drain_timeout_s",
                f"{spec.autoscaling.drain_timeout_s} s is shorter than a node's drain ({hc.interval_s} x "
                f"{hc.unhealthy_threshold} s for the load balancer to stop sending + serving.gateway.read_timeout_s "
                f"{spec.serving.gateway.read_timeout_s} s = {drain} s): the node would go with requests running; "
                f"set it to at least {drain}",
            )
        )
    if billing.base > spec.replicas.max:
        out.append(("fleet.billing.on_demand_base", f"{billing.base} is above replicas.max ({spec.replicas.max}); lower it"))
    if spec.replicas.max < len(spec.zones) and spec.environment == "prod":
        out.append(("fleet.replicas.max", f"is below the number of zones ({len(spec.zones)}); nodes cannot spread"))
    for i, s in enumerate(spec.autoscaling.schedules):
        if s.max > spec.replicas.max:
            out.append((f"fleet.autoscaling.schedules.{i}.max", f"{s.max} is above replicas.max ({spec.replicas.max})"))
        if spec.environment == "prod" and s.min < 2:
            out.append((f"fleet.autoscaling.schedules.{i}.min", "prod keeps at least 2 nodes at every hour"))

    vpc = ipaddress.ip_network(spec.network.vpc_cidr)
    room = 2 ** (spec.network.subnet_prefix - vpc.prefixlen)
    if room < len(spec.zones):
        out.append(
            (
                "fleet.network.subnet_prefix",
                f"/{spec.network.subnet_prefix} gives {room} subnets; {len(spec.zones)} zones need more",
            )
        )
    return out


def rollout_problems(spec: FleetSpec) -> list[tuple[str, str]]:
    """A rollout's fields that depend on the rest of the fleet."""
    r = spec.rollout
    if r is None:
        return []
    out = []
    if r.candidate.label == spec.label:
        out.append(
            (
                "fleet.rollout.candidate.label",
                f"{r.candidate.label!r} is the fleet's own label: the two serving groups need different names",
            )
        )
    new_name = r.candidate.model.name
    if new_name != spec.model.name and new_name in spec.model.aliases:
        out.append(
            (
                "fleet.model.aliases",
                f"{new_name!r} is the rollout candidate's model: the current group would answer requests for it with "
                f"{spec.model.name}; remove it from the fleet's aliases",
            )
        )
    if r.phase == "rolling" and r.candidate_weight not in (0, *r.plan):  # 0: not started or rolled back
        steps = ", ".join(map(str, r.plan))
        out.append(("fleet.rollout.candidate_weight", f"{r.candidate_weight} is not one of the steps ({steps})"))
    prompts = r.gates.answers.prompts
    if prompts is not None:
        where = "fleet.rollout.gates.answers.prompts"
        if not prompts.endswith((".jsonl", ".yaml", ".yml")):
            out.append((where, f"{prompts!r} is not a prompt file: a .jsonl or .yaml file, relative to the project folder"))
        else:
            try:
                root = project_root()
            except UserError:
                root = None
            path = Path(prompts)
            if path.is_absolute() or ".." in path.parts:
                out.append((where, f"{prompts!r}: give a path inside the project folder (relative, without ..)"))
            elif root is not None and not os.path.isfile(root / path):  # Path.is_file raises on a name of > 255 bytes
                out.append((where, f"no such file {prompts!r} in the project folder {root}"))
    c = r.candidate.replicas
    if c is not None and c.max > spec.replicas.max and r.strategy == "canary":
        out.append(("fleet.rollout.candidate.replicas.max", f"{c.max} is above replicas.max ({spec.replicas.max}) for a canary"))
    return out


def _resolve(spec: FleetSpec, stack: str, file: str, problems: list[Problem]) -> Fleet | None:
    cloud = spec.cloud
    if spec.gpu.instance_type:
        itype = catalog.instance_type(cloud, spec.gpu.instance_type)
        sizes = [t.type for t in catalog.instance_types(cloud) if t.gpu == spec.gpu.kind]
        if itype is None:
            problems.append(
                Problem(
                    file,
                    "fleet.gpu.instance_type",
                    f"unknown {cloud} instance type {spec.gpu.instance_type!r}"
                    + did_you_mean(spec.gpu.instance_type, sizes or [t.type for t in catalog.instance_types(cloud)]),
                )
            )
        elif itype.gpu != spec.gpu.kind or itype.gpus != spec.gpu.count:
            problems.append(
                Problem(
                    file,
                    "fleet.gpu.instance_type",
                    f"{itype.type} has {itype.gpus}x {itype.gpu}, not {spec.gpu.count}x {spec.gpu.kind}",
                )
            )
    else:
        itype = catalog.default_instance_type(cloud, spec.gpu.kind, spec.gpu.count)
        if itype is None:
            counts = sorted({t.gpus for t in catalog.instance_types(cloud) if t.gpu == spec.gpu.kind})
            problems.append(
                Problem(
                    file,
                    "fleet.gpu.count",
                    f"{cloud} has no {spec.gpu.kind} instance with {spec.gpu.count} GPUs"
                    + (
                        f"; available counts: {', '.join(map(str, counts))}"
                        if counts
                        else f"; {cloud} does not sell {spec.gpu.kind}"
                    ),
                )
            )
    image = image_for(spec.image.recipe, cloud, spec.region)
    if isinstance(image, str):
        problems.append(Problem(file, "fleet.image.recipe", image))
    elif unrecorded := unrecorded_problem(image):
        problems.append(unrecorded)
    if problems or itype is None or isinstance(image, str):  # a missing type or image has added a problem above
        return None
    return Fleet(
        stack=stack,
        file=file,
        spec=spec,
        instance_type=itype,
        gpu=catalog.gpu_kinds()[spec.gpu.kind],
        image_id=image.image_id,
        image_pins=image.pins,
        subnets=tuple(spec.network.subnets(len(spec.zones))),
        image_placeholder=image.placeholder,
    )
