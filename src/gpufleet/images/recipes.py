"""Image recipes: one YAML file per recipe in images/recipes/, loaded into a typed Recipe.

A recipe name is looked up in the project's images/recipes/ first, then in the package's shipped recipes (one lookup,
stacks/project.py recipe_file, for the stacks, the images program, the lock, the image commands, `region new` and the
sizing): a project's file shadows a shipped one of the same name. Outside a project only the shipped recipes exist. A
recipe's python_lock is a file of the images/ folder holding the recipes folder it was found in (project.recipe_images).

A recipe is one consistent software line (base OS, NVIDIA driver, CUDA runtime, Python, torch, vLLM,
exporters) plus the ordered build steps that install it. Whether the line fits together and fits the
GPU kinds it claims is decided in compat.py; the steps are rendered by steps.py.
"""

# Annotations are objects here, not postponed (no `from __future__ import annotations`): pydantic would compile each
# annotation string when it builds the models, at every command's start (issue 25, scripts/bench.py --instructions).
import os
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gpufleet import inputs, registry
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.images import facts, gateway
from gpufleet.secret import has_credentials, holds_url_credentials, redact_url
from gpufleet.stacks import catalog
from gpufleet.stacks.project import (
    NAME_PATTERN,
    SHIPPED_RECIPES,
    found_in,
    misnamed_recipes,
    recipe_file,
    recipe_files,
    recipe_folders,
    recipe_images,
    shown,
    shown_folders,
)

RECIPES = SHIPPED_RECIPES  # the shipped recipes (one constant: stacks/project.py's)
# images/: a recipe's python_lock is a file under the images/ folder of the recipes folder it was found in (the
# project's or the package's: project.recipe_images); a recipe file elsewhere (`-r my.yaml`) names its lock under the
# package's images/, this one.
IMAGES = recipe_images(SHIPPED_RECIPES)
REQUIRED_PINS = ("driver", "cuda", "python", "torch", "vllm")
# A PyPI release as pip shows it (PEP 440's public version: release, then a pre-, post- or dev-release): torch and vllm
# are compared with `pip show`'s Version: (python_packages.sh.j2; torch's cut at "+", so its pin has no +cu local
# part) and with the lock's name==version (compat.lock_problems), e.g. 2.14.0, 0.10.1.1, 0.6.3.post1, 2.8.0rc1.
PYPI_VERSION = r"\d+(\.\d+)+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
# A project's name on PyPI (PEP 508's names: letters and digits, with . _ - inside).
PYPI_NAME = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"


# Each pin's version form: pin -> (pattern, its form, an example). Every pin is a version: the values are written into
# the build scripts, the serving unit (vllm's, in Description=), the manifest and images/lock.json, and compared with
# what the host reports; a newline or a space in one split a unit's line or a script's. driver, cuda and python are
# compared as numbers (compat.py); node_exporter with `prometheus-node-exporter --version` (facts.py: x.y.z); dcgm is
# DCGM's release (4.4.1; the Debian package's epoch and revision, 1:4.4.1-1, are its apt_packages version).
PIN_FORMS = {
    "driver": (r"\d+(\.\d+){1,2}", "the driver's version", "580.95.05"),
    "cuda": (r"\d+\.\d+(\.\d+)?", "major.minor", "13.0"),
    "python": (r"3\.\d+(\.\d+)?", "3.minor", "3.12"),
    "torch": (PYPI_VERSION, "the release as PyPI lists it, without a +cu local part", "2.14.0"),
    "vllm": (PYPI_VERSION, "the release as PyPI lists it", "0.33.0"),
    "node_exporter": (r"\d+\.\d+\.\d+", "major.minor.patch, as node_exporter --version shows it", "1.7.0"),
    "dcgm": (r"\d+(\.\d+){1,3}", "DCGM's release, without the Debian epoch or revision", "4.4.1"),
}
# Any other pin (a recipe's own, e.g. nccl): one word of letters, digits and . + ~ : _ -, starting with a digit.
OTHER_PIN = (r"\d[A-Za-z0-9.+~:_-]{0,63}", "one word of letters, digits and . + ~ : _ -, starting with a digit", "1.2.3")
# A recipe's name becomes file names (images/recipes/<name>.yaml, build/images/<name>-<host>.manifest.json), a lock key
# and a part of cloud image names; a step's name becomes the file names of `image render` (<nn>-<step>.<phase>.sh) and
# a line of each script's header: each is one path component, never hidden, never `..`, one line. At most 64
# characters: a recipe's name is also a tag value on the image (Alibaba Cloud: at most 128 characters) and, with the
# builder's host, a file name (<name>-<host>.manifest.json: at most 255 bytes). NAME_PATTERN: stacks/project.py's,
# which lists a folder's recipes by it.
NAME_RULE = "1 to 64 lowercase letters, digits, '.', '-' and '_', starting with a letter or digit (no '/')"


def name_problem(name: str, what: str = "recipe name", example: str = "cuda13-vllm") -> str | None:
    """Why `name` cannot be a recipe's (or a step's) name; None when it can."""
    if re.fullmatch(NAME_PATTERN, name):
        return None
    return f"{name[:60]!r}{'…' if len(name) > 60 else ''} is not a {what}: use {NAME_RULE}, e.g. {example}"


def _recipe_name(name: str) -> str:
    if why := name_problem(name):
        raise ValueError(why)
    return name


def _step_name(name: str) -> str:
    if why := name_problem(name, "step name", "apt-packages"):
        raise ValueError(why)
    return name


def _compute_capability(value: str) -> str:
    """A compute capability as compat.py compares them: major.minor in digits ("8.6", "12.0")."""
    if not re.fullmatch(r"\d+\.\d+", value):
        raise ValueError(f'{value!r} is not a compute capability: write major.minor, e.g. "8.6" (sm_86) or "9.0"')
    return value


# Recipe values written into the build scripts (images/templates/*.sh.j2): held to the syntax of what reads them, as
# the layout's are, so a placeholder ("TODO") is not taken for a pinned hash and a newline does not split a line.
def _syntax(pattern: str, what: str) -> Callable[[Any], Any]:
    """A validator holding a value (None passes: a field's null) to the whole of `pattern`, refusing any other as
    "'<value>' is not <what>", the value cut to 80 characters. The pattern is compiled on first use (re's cache), not
    at import: loading a stack imports this module."""

    def check(value: Any) -> Any:
        if value is not None and not re.fullmatch(pattern, value):
            raise ValueError(f"{value[:80]!r} is not {what}")
        return value

    return check


_sha256 = _syntax(inputs.SHA256_HEX, "a sha256: 64 lowercase hex digits (`sha256sum FILE`), or null until known")


def _absolute(value: str) -> str:
    if not re.fullmatch(r"(/[A-Za-z0-9._+-]+)+", value) or any(part in (".", "..") for part in value.split("/")):
        raise ValueError(f"{value[:80]!r} is not an absolute path of letters, digits and . _ + - (e.g. /opt/gpufleet)")
    return value


def _mode_as_written(value: object) -> object:
    """YAML reads an unquoted 0644 as the octal number 420: say so in the user's digits, not as 'got 420'."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f'is the number {value} (YAML reads an unquoted 0{value:o} as an octal number): quote it, "0{value:o}"')
    return value


_file_mode = _syntax(r"0[0-7]{3}", "a file mode: 0 and three octal digits, e.g. 0755 (a program) or 0644")


def _one_line(value: str) -> str:
    if not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"{value[:80]!r} is not one line of text: write it on one line, without control characters")
    return value


_deb_package = _syntax(
    r"[a-z0-9][a-z0-9+.-]+",
    "a Debian package name: lowercase letters, digits and + . -, starting with a letter or digit (e.g. nginx-common)",
)
_deb_version = _syntax(
    r"([0-9]+:)?[0-9][A-Za-z0-9.+~-]*",
    "a Debian version: [epoch:]upstream[-revision] of letters, digits and . + ~ -, starting with a digit (e.g. "
    "1:4.4.1-1), as `apt-cache policy NAME` shows it; or null until known",
)


def url_problem(value: str) -> str | None:
    """Why a URL the builder fetches (a download, a keyring, the tool mirror) cannot be in a recipe; None when it can.
    A user:password@ or a query string (a presigned URL's token) would sit in the committed recipe, in the rendered
    build scripts and in curl's command line on the builder (which `ps` shows); the URL is never shown with them."""
    fix = (
        "a recipe is committed and its URLs are written into the build scripts and curl's command line: mirror the file "
        "where the builder fetches it without credentials (the recipe's hash checks it), and give that URL"
    )
    if has_credentials(value):
        return f"has credentials in it (user:password@): {fix}"
    if "?" in value:
        return f"{redact_url(value)[:120]!r} has a query string (?..., where a presigned URL's token goes): {fix}"
    return None


def _fetched_url(value: str) -> str:
    if why := url_problem(value):
        raise ValueError(why)
    return value


Sha256 = Annotated[str | None, AfterValidator(_sha256)]
FetchedUrl = Annotated[str, AfterValidator(_fetched_url)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class BaseImage(Strict):
    """How to find the base OS image in one cloud (a name pattern of the cloud's public images)."""

    name_regex: str
    owners: str = "system"
    source: str = Field(description="where the pattern was read (URL or console page) and when")


class AptPackage(Strict):
    name: Annotated[str, AfterValidator(_deb_package)]
    version: Annotated[str | None, AfterValidator(_deb_version)] = Field(
        description="exact Debian version string; apt installs name=version (null: not yet confirmed, a build refuses)"
    )
    repo: str = Field(description="name of an apt_repos entry, or 'ubuntu' for the distribution archive")
    verified: bool = Field(False, description="true once the exact version was seen in the repository index")


# compared with what `gpg --show-keys --with-colons` prints in its fpr record: 40 uppercase hex digits, no spaces
_fingerprint = _syntax(
    r"[0-9A-F]{40}",
    "an OpenPGP fingerprint as gpg prints it: 40 uppercase hex digits without spaces (`gpg --show-keys --with-colons "
    "FILE`, its fpr line), or null",
)
# sources.list(5): the files in sources.list.d "may only contain letters (a-z and A-Z), digits (0-9), underscore (_),
# hyphen (-) and period (.) characters"; the name is written unquoted into the scripts' /etc/apt/sources.list.d/<name>.list
_sources_list_name = _syntax(
    r"[A-Za-z0-9_-][A-Za-z0-9_.-]*",
    "an apt source name: letters, digits and _ - . (it names /etc/apt/sources.list.d/<name>.list), e.g. nvidia-cuda",
)


def _deb_line(value: str) -> str:
    """A deb line whose repository URL holds no user:password@ and no query string, as url_problem holds a fetched URL:
    the line is committed, written into the build scripts and the builder's command line, and into
    /etc/apt/sources.list.d/, which the image keeps and every region copies. Never shown with them."""
    fix = (
        "a recipe is committed and the line is written into the build scripts, the builder's command line and "
        "/etc/apt/sources.list.d/, which the image keeps: use a repository or mirror the builder reaches without "
        "credentials (apt checks it against its signed-by keyring), and give that URL"
    )
    if holds_url_credentials(value) or any(has_credentials(w) for w in value.split() if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", w)):
        raise ValueError(f"has credentials in it (user:password@): {fix}")
    for word in value.split():
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:[/\\]", word) and "?" in word:
            raise ValueError(f"{redact_url(word)[:120]!r} has a query string (?..., where a presigned URL's token goes): {fix}")
    return value


class AptRepo(Strict):
    name: Annotated[str, AfterValidator(_sources_list_name)]
    line: Annotated[str, AfterValidator(_one_line), AfterValidator(_deb_line)] = Field(
        description="the deb line, with signed-by= the keyring; its URL holds no credentials and no query string"
    )
    keyring_url: FetchedUrl
    keyring_sha256: Sha256 = Field(None, description="sha256 of the keyring file")
    keyring_fingerprint: Annotated[str | None, AfterValidator(_fingerprint)] = Field(
        None, description="OpenPGP fingerprint of the keyring's only primary key (a build needs this or keyring_sha256)"
    )
    keyring_fingerprint_source: str = ""
    keyring_path: Annotated[str, AfterValidator(_absolute)]


class Download(Strict):
    name: str
    url: FetchedUrl
    sha256: Sha256 = Field(None, description="sha256 of the file; a build refuses a missing one")
    dest: Annotated[str, AfterValidator(_absolute)] = Field(description="where the file is installed (an absolute path)")
    mode: Annotated[str, BeforeValidator(_mode_as_written), AfterValidator(_file_mode)] = Field(
        "0755", description="its permission bits (`install -m`): 0755 a program, 0644 a data file"
    )


_pypi_name = _syntax(PYPI_NAME, "a PyPI project name: letters and digits, with . _ - inside (e.g. tccli)")
_pypi_version = _syntax(PYPI_VERSION, "a version: write the release as PyPI lists it, e.g. 3.1.118.1")
_command = _syntax(
    r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    "a command name: letters, digits and _ . -, starting with a letter or digit (it is linked as "
    "/usr/local/bin/<command>), e.g. tccli",
)


class PythonTool(Strict):
    """A command-line tool from PyPI, locked with the serving packages and linked into /usr/local/bin."""

    package: Annotated[str, AfterValidator(_pypi_name)] = Field(description="its name on PyPI (e.g. tccli)")
    version: Annotated[str, AfterValidator(_pypi_version)] = Field(description="the release pinned, as PyPI lists it")
    command: Annotated[str, AfterValidator(_command)] = Field(
        description="its console script, linked as /usr/local/bin/<command>"
    )


class Layout(Strict):
    """Where things live on the node (the serving layout the fleet's user-data relies on)."""

    prefix: str = "/opt/gpufleet"
    venv: str = "/opt/gpufleet/venv"
    models: str = "/data/models"
    user: str = "vllm"
    unit: str = "vllm.service"
    manifest: str = "/etc/gpufleet/image-manifest.json"
    bin: str = Field("/opt/gpufleet/bin", description="the recipe-owned launcher and prepare program")
    prepare_unit: str = Field("gpufleet-prepare.service", description="root oneshot: data disk, weights, API key")
    env_file: str = Field("/etc/gpufleet/fleet.env", description="the fleet's environment (user-data), read by systemd only")
    argv_file: str = Field("/etc/gpufleet/vllm-argv.json", description="vLLM's argv as a JSON list (user-data)")
    api_key_file: str = Field(gateway.API_KEY_FILE, description="the API key on tmpfs, root 0600, a unit credential")
    cache: str = Field("gpufleet-vllm", description="CacheDirectory= name: /var/cache/<cache> for vLLM, Triton, HF")
    # The gateway (images/gateway.py): its paths are that module's own constants, so the node renderer's defaults,
    # the image's units and the fleet's user-data cannot name different files.
    gateway_env_file: str = Field(gateway.ENV_FILE, description="the gateway's environment (user-data), KEY=VALUE")
    gateway_lib: str = Field(gateway.NODE_LIB, description="where the image puts gateway.py and its templates")
    gateway_unit: str = Field("gpufleet-gateway-render.service", description="root oneshot: nginx config and key map")
    # The node agent (images/node_agent.py, docs/scaling-node.md).
    metrics_unit: str = Field("gpufleet-metrics.service", description="publishes the scaling signals (Alibaba)")
    spot_unit: str = Field("gpufleet-spot-watch.service", description="drains on the cloud's spot reclaim notice")
    ready_unit: str = Field("gpufleet-ready.service", description="ends the scale-out lifecycle wait once vLLM serves")
    # ready asks systemd about units (systemctl over the system D-Bus), which refuses a DynamicUser= service: the
    # dynamic uid cannot be resolved by dbus-daemon ("Failed to get properties: Transport endpoint is not connected";
    # systemd issue 22737, NixOS issue 297756 on systemd 255, Ubuntu 24.04's; seen in the node boot test). So that unit
    # runs as a static system user the image creates, with the same sandbox otherwise.
    agent_user: str = Field("gpufleet-agent", description="the system user of units that ask systemd over D-Bus (ready)")
    drain_command: str = Field("/usr/local/bin/gpufleet-drain", description="what a scale-in lifecycle hook runs")

    # Each value is written into shell scripts, unit files (User=, ExecStart=, CacheDirectory=) and cloud-init: a
    # space, a newline or a relative path there made a broken unit or a layout under the builder's working folder.
    @field_validator(
        "prefix", "venv", "models", "manifest", "bin", "env_file", "argv_file", "api_key_file", "gateway_env_file",
        "gateway_lib", "drain_command",
    )  # fmt: skip
    @classmethod
    def _absolute(cls, v: str) -> str:
        return _absolute(v)

    @field_validator("user", "agent_user")
    @classmethod
    def _user(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z_][a-z0-9_-]{0,31}", v):
            raise ValueError(f"{v!r} is not a system user name: a lowercase letter or _, then lowercase letters, digits, _ or -")
        return v

    @field_validator("unit", "prepare_unit", "gateway_unit", "metrics_unit", "spot_unit", "ready_unit")
    @classmethod
    def _unit(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9:_.@-]+\.service", v):
            raise ValueError(f"{v!r} is not a service unit name: letters, digits and : _ . @ -, ending .service")
        return v

    @field_validator("cache")
    @classmethod
    def _cache(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._-]+", v) or v in (".", ".."):
            raise ValueError(f"{v!r} is not a CacheDirectory= name: one folder name of letters, digits and . _ -")
        return v


def _fact(name: str) -> str:
    if name not in facts.FACTS:
        raise ValueError(f"{name!r} is not a fact of images/facts.py" + did_you_mean(name, list(facts.FACTS)))
    return name


def _manifest_fact(name: str) -> str:
    _fact(name)
    if needs := facts.FACTS[name].needs:
        raise ValueError(f"{name} reads a step's {', '.join(needs)} var: give it as a step's fact, not a manifest fact")
    return name


class Step(Strict):
    name: Annotated[str, AfterValidator(_step_name)] = Field(description=f"the step's name: {NAME_RULE}")
    template: str = Field(description="images/templates/<template>.sh.j2 with blocks check / apply / cleanup")
    fact: Annotated[str, AfterValidator(_fact)] | None = Field(
        None, description="a fact of facts.py whose observed value goes to the manifest"
    )
    pin: str | None = Field(None, description="the pin the fact must equal after apply (a key of the recipe's pins)")
    timeout_s: int = Field(600, ge=1)
    vars: dict[str, str | int | bool] = Field({})

    @model_validator(mode="after")
    def _fact_vars(self):
        # a fact whose command reads a var the step lacks was a KeyError at build
        if self.fact and (missing := [v for v in facts.FACTS[self.fact].needs if not str(self.vars.get(v, "")).strip()]):
            raise ValueError(f"fact {self.fact} reads vars.{', vars.'.join(missing)}: give it in the step's vars")
        return self


class Recipe(Strict):
    name: Annotated[str, AfterValidator(_recipe_name)] = Field(description=f"the recipe's name: {NAME_RULE}")
    description: str
    gpus: list[str] = Field(description="GPU kinds this recipe serves (names as in stacks/data/gpus.yaml)")
    os: str = Field(description="e.g. ubuntu-24.04")
    base_image: dict[str, BaseImage] = Field({}, description="cloud -> base image")
    pins: dict[str, str] = Field(description="driver, cuda, python, torch, vllm, exporters: version strings")
    torch_cuda_archs: list[Annotated[str, AfterValidator(_compute_capability)]] = Field(
        [], description='compute capabilities the pinned torch wheel ships kernels for, as major.minor ("8.6")'
    )
    torch_cuda_archs_source: str = ""
    # Named as vLLM's --dtype names them (float16, not its alias half); serving.dtype is checked against them.
    dtypes: list[Literal["float16", "bfloat16", "float32"]] = Field([], description="dtypes the recipe promises to serve")
    python_lock: str | None = Field(
        None, description="hash lock for pip --require-hashes, relative to the recipe's images/ folder (null: none)"
    )
    python_tools: list[PythonTool] = Field([], description="CLIs from PyPI the node's boot scripts call")
    tool_mirror: FetchedUrl = Field("", description="where the clouds' CLI release binaries are mirrored (+ the command's name)")
    apt_repos: list[AptRepo] = Field([])
    apt_packages: list[AptPackage] = Field([])
    downloads: list[Download] = Field([])
    layout: Layout = Layout()
    steps: list[Step]
    templates: str | None = Field(None, description="extra template folder, relative to the recipe file")
    manifest_facts: list[Annotated[str, AfterValidator(_manifest_fact)]] | None = Field(
        None, description="facts recorded in the manifest besides the steps' own; default facts.MANIFEST_FACTS"
    )
    regions: dict[str, list[str]] = Field({}, description="cloud -> regions the image is copied to")
    sources: dict[str, str] = Field({}, description="pin -> where its value was verified")
    file: str = ""

    _path: str = PrivateAttr("")  # the recipe file's absolute path (`file` is as messages show it)
    _images: str = PrivateAttr("")  # the images/ folder of the recipes folder it was found in (load_recipe)

    @property
    def path(self) -> str:
        return self._path

    @property
    def images(self) -> Path:
        """The images/ folder its python_lock is named relative to: the one of the recipes folder load_recipe found it in
        (a project's images/, or the package's: project.recipe_images), else, for a recipe file elsewhere, the
        package's images/ (IMAGES)."""
        return Path(self._images) if self._images else IMAGES

    @model_validator(mode="before")
    @classmethod
    def _cloud_tools(cls, data):
        """The CLIs of the clouds the image is copied to come from their profiles (registry: node_tools), appended to
        downloads and python_tools unless the recipe pins one of the same command itself."""
        if not isinstance(data, dict) or not isinstance(data.get("regions"), dict):
            return data
        downloads, tools = list(data.get("downloads") or []), list(data.get("python_tools") or [])
        have = {str(d.get("dest", "")).rsplit("/", 1)[-1] for d in downloads if isinstance(d, dict)}
        have |= {t.get("command") for t in tools if isinstance(t, dict)}
        for cloud in data["regions"]:
            if cloud not in registry.names():
                continue  # not a registered cloud: the regions check names it
            for t in registry.profile(cloud).node_tools:
                if t.command in have:
                    continue
                have.add(t.command)
                if t.package:
                    tools.append({"package": t.package, "version": t.version, "command": t.command})
                elif not data.get("tool_mirror"):
                    raise ValueError(
                        f"tool_mirror: {cloud}'s {t.command} is a release binary: name the mirror it is fetched from"
                    )
                elif not isinstance(data["tool_mirror"], str) or url_problem(data["tool_mirror"]):
                    continue  # tool_mirror's own check names it (its downloads would repeat the problem)
                else:
                    url = f"{data['tool_mirror']}{t.command}"
                    downloads.append(
                        {"name": t.name or t.command, "url": url, "sha256": t.sha256, "dest": f"/usr/local/bin/{t.command}"}
                    )
        return {**data, "downloads": downloads, "python_tools": tools}

    @field_validator("pins")
    @classmethod
    def _pins(cls, v: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        missing = [k for k in REQUIRED_PINS if not v.get(k)]
        if info.data.get("gpus") and missing:  # gpus is read before pins (field order)
            raise ValueError(f"missing {', '.join(missing)} (a recipe that serves GPUs pins all of {', '.join(REQUIRED_PINS)})")
        return {k: str(x) for k, x in v.items()}

    @field_validator("python_lock")
    @classmethod
    def _lock_named(cls, v: str | None) -> str | None:
        if v == "":  # was read as "no lock" (null), silently
            raise ValueError("is empty: give the lock file's path relative to images/ (e.g. locks/cuda13-vllm.txt)")
        # /etc/shadow or ../../x was read and its text written into the install script (review F2): the lock is a file
        # of images/, committed with the recipes, as `templates` is the recipe's own folder
        if v is not None and (v.startswith(("/", "\\", "~")) or ".." in re.split(r"[/\\]", v)):
            raise ValueError(
                f"{v[:80]!r} is not a path inside images/: give the lock file's path relative to images/, without '..' "
                "(e.g. locks/cuda13-vllm.txt)"
            )
        return v

    @field_validator("base_image", "regions")
    @classmethod
    def _clouds(cls, v: dict) -> dict:
        # a cloud no one registered (or misspelt) was skipped: no image copied there, no CLI of it on the node
        if bad := [why for cloud in v if (why := registry.unknown(cloud))]:
            raise ValueError("; ".join(bad))
        return v

    @field_validator("regions")
    @classmethod
    def _regions(cls, v: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        clouds = (info.context or {}).get("clouds")  # see load_recipe
        bad = []
        for cloud, regions in v.items():
            if clouds is None or cloud in clouds:
                known = list(catalog.regions(cloud))
                bad += [
                    f"{cloud}: {r!r} is not a region of {catalog.catalog_file(cloud)}" + did_you_mean(r, known)
                    for r in regions
                    if r not in known
                ]
            if dupes := _repeated(regions):
                bad.append(f"{cloud}: {', '.join(dupes)} listed twice")
        if bad:
            raise ValueError("; ".join(bad))
        return v

    @field_validator("gpus")
    @classmethod
    def _gpu_kinds(cls, v: list[str]) -> list[str]:
        # an unknown kind was a failed `image check` (exit 1) and `image render` wrote the scripts anyway
        kinds = catalog.gpu_kinds()
        if bad := [f"{g!r} is not a GPU kind of {catalog.gpus_file()}" + did_you_mean(g, kinds) for g in v if g not in kinds]:
            raise ValueError("; ".join(bad))
        return v

    @field_validator("gpus", "dtypes", "torch_cuda_archs")
    @classmethod
    def _once(cls, v: list[str]) -> list[str]:
        if dupes := _repeated(v):
            raise ValueError(f"{', '.join(dupes)} listed twice: name each once")
        return v

    @field_validator("steps")
    @classmethod
    def _step_names(cls, v: list[Step]) -> list[Step]:
        if dupes := _repeated([s.name for s in v]):
            raise ValueError(f"step names repeat: {', '.join(dupes)}")
        return v

    @property
    def cuda_major(self) -> int:
        return int(self.pins["cuda"].split(".")[0])

    def commands(self) -> set[str]:
        """Commands the image puts on PATH: downloads into /usr/local/bin and the Python tools."""
        downloaded = {d.dest.rsplit("/", 1)[1] for d in self.downloads if d.dest.startswith("/usr/local/bin/")}
        return downloaded | {t.command for t in self.python_tools}

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def pin_problems(self) -> list[tuple[str, str]]:
        """(field path, message) for each pin that is not a version of its form (PIN_FORMS, else OTHER_PIN), and each
        step whose `pin` is not a key of `pins` (a KeyError at build) or that pins without a `fact` to compare (never
        checked)."""
        out = [
            (f"recipe.pins.{k}", f"{v[:40]!r}{'…' if len(v) > 40 else ''} is not a version: write {form}, e.g. {example}")
            for k, v in self.pins.items()
            for pattern, form, example in [PIN_FORMS.get(k, OTHER_PIN)]
            if not re.fullmatch(pattern, v)
        ]
        for i, s in enumerate(self.steps):
            if s.pin is not None and s.pin not in self.pins:
                out.append(
                    (
                        f"recipe.steps.{i}.pin",
                        f"{s.pin!r} is not a key of pins"
                        + (did_you_mean(s.pin, list(self.pins)) or " (the recipe has none): add it to pins or remove pin:"),
                    )
                )
            elif s.pin is not None and not s.fact:
                out.append(
                    (f"recipe.steps.{i}.pin", f"pins {s.pin} but the step has no fact to compare: add fact: or remove pin:")
                )
        return out

    def template_folders(self) -> list[Path]:
        """Where the steps' templates are looked up, in order: the recipe's own `templates` folder (relative to its
        file), then the shipped images/templates/."""
        folders = []
        if self.templates:
            base = Path(self.path or os.path.abspath(self.file)).parent
            folders.append((base / self.templates).resolve())
        return [*folders, gateway.TEMPLATES]

    def template_problems(self) -> list[tuple[str, str]]:
        """(field path, message) for each step whose template is in none of the template folders (a name with a '..'
        part is in none: Jinja2 refuses to leave its folders)."""
        folders = self.template_folders()
        if self.templates and not os.path.isdir(folders[0]):  # a misspelt folder: the shipped templates used instead
            return [
                ("recipe.templates", f"{folders[0]} is not a folder: give the recipe's template folder, relative to its file")
            ]
        missing = [
            (i, s)
            for i, s in enumerate(self.steps)
            if ".." in s.template.split("/") or not any(os.path.isfile(f / f"{s.template}.sh.j2") for f in folders)
        ]
        if not missing:  # the usual case: no folder listing (every stack load reads its recipe)
            return []
        known = sorted({p.name.removesuffix(".sh.j2") for f in folders for p in f.glob("*.sh.j2")})
        return [
            (
                f"recipe.steps.{i}.template",
                f"no template {s.template}.sh.j2 in {' or '.join(map(str, folders))}" + did_you_mean(s.template, known),
            )
            for i, s in missing
        ]


def _repeated(values: list[str]) -> list[str]:
    """The values listed more than once, sorted."""
    return sorted({x for x in values if values.count(x) > 1})


def recipe_names() -> list[str]:
    """Every recipe name: the project's images/recipes/ and the package's (stacks/project.py recipe_files; a file whose
    name is no recipe name is left out: misnamed_note names it)."""
    return list(recipe_files())


def misnamed(folders: tuple[Path, ...] | None = None) -> list[str]:
    """For each .yaml file of the recipe folders whose name is no recipe name (left out of every listing: one such file
    broke every command that lists the recipes), a sentence naming it and the fix."""
    return [f"{shown(p)} is not read: {name_problem(p.stem)}; rename the file to <name>.yaml" for p in misnamed_recipes(folders)]


def is_path(name: str) -> bool:
    """A recipe given as a file (a path, or a name ending .yaml / .yml), not by its name in images/recipes/."""
    return name.endswith((".yaml", ".yml")) or "/" in name


def recipe_path(name: str, folders: tuple[Path, ...] | None = None) -> Path:
    """A recipe name (the project's images/recipes/<name>.yaml, else the package's: stacks/project.py recipe_file) or a
    path to a recipe file: a value with a '/' or ending in .yaml or .yml, or a file that exists when no recipe has that
    name (`-r my-recipe.json`)."""
    if is_path(name):
        return Path(name)
    named = recipe_file(name, folders)
    return Path(name) if not os.path.exists(named) and os.path.isfile(name) else named  # os.path: False on any OSError


def load_recipe(name: str, flag: str = "", cloud: str | None = None) -> Recipe:
    """The recipe of a name (the project's images/recipes/, then the package's) or of a file; a UserError for a value
    that is no recipe name and no file (named by `flag`, the option that gave it, else by the recipe folders), before a
    recipe is looked up by it.

    `cloud`: a stack's, whose validation and program read the recipe for that cloud alone; its `regions` are then
    checked against that cloud's catalog only (the image commands, cloud None, check every cloud's). Reading another
    cloud's catalog for it was 12M instructions of a 2,900M Tencent preview (issue 25; scripts/bench.py)."""
    folders = recipe_folders()
    if not is_path(name) and (why := name_problem(name)) and not os.path.isfile(name):  # a file: `-r My.json`
        raise UserError([Problem(flag or shown_folders(folders), "", why)])
    path = recipe_path(name, folders)
    by_name = path.parent in folders  # found (or looked for) by its name, as the lookup wrote the path
    folder = path.parent if by_name else found_in(path, folders)  # a file given by its path in a recipes folder too
    images = str(recipe_images(folder)) if folder is not None else ""
    # messages name the file as found, relative to the current folder (one cache entry per folder); the file's real
    # path is its identity
    return _load(str(path), os.path.realpath(path), name, cloud, _cwd(), folders, images, by_name)


def fleet_recipe(spec) -> Recipe:
    """The image recipe a fleet spec names, read for the spec's cloud (load_recipe)."""
    return load_recipe(spec.image.recipe, cloud=spec.cloud)


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the current folder is gone
        return ""


@lru_cache(maxsize=64)
def _load(
    path_str: str, real: str, name: str, cloud: str | None, cwd: str, folders: tuple[Path, ...], images: str, by_name: bool
) -> Recipe:
    path = Path(path_str)
    shown = _shown(path)
    if not os.path.exists(path):  # a file name too long to exist included (Path.exists raises there)
        names = list(recipe_files(folders))
        if not by_name:
            why = f"no such file: give the path of a recipe file, or a recipe name ({', '.join(names)})"
        else:
            why = f"no such image recipe {name!r}" + did_you_mean(name, names)
            if len(folders) > 1:  # in a project: its images/recipes/ and the package's (the file named is the former's)
                why += f"; looked in {shown_folders(folders)}"
            why += "".join(f"; {note}" for note in misnamed(folders))
            if Path(name).suffix:  # a file name, perhaps: say that it was looked for too
                why += f"; no file {name} either: give a recipe name or the path of a recipe file"
        raise UserError([Problem(shown, "", why)])

    raw = inputs.load_mapping(path, shown, what="a recipe (a mapping of keys to values)")
    try:
        recipe = Recipe.model_validate({**raw, "file": shown}, context={"clouds": None if cloud is None else {cloud}})
    except ValidationError as exc:
        raise UserError(
            [Problem(shown, ".".join(["recipe", *map(str, e["loc"])]), inputs.model_error(e)) for e in exc.errors()]
        ) from None
    recipe._path = real
    recipe._images = images
    if images and recipe.name != path.stem:  # in a recipes folder, by name or by path: the file name is the recipe's
        raise UserError([Problem(shown, "recipe.name", f"is {recipe.name!r}; it must equal the file name {path.stem!r}")])
    if missing := recipe.template_problems():
        raise UserError([Problem(shown, where, why) for where, why in missing])
    if bad := recipe.pin_problems():
        raise UserError([Problem(shown, where, why) for where, why in bad])
    return recipe


def _shown(path: Path) -> str:
    """A recipe file (or the recipes folder) as messages name it: the path it was found at (a link in it not followed),
    relative to the current folder when under it (src/gpufleet/images/recipes/... in a checkout), else absolute."""
    return shown(path)
