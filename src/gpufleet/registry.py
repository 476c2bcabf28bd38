"""The cloud registry: one entry per cloud, the contract each cloud package fulfils, capabilities as an enum.

A cloud is a package (components/<cloud>/) with one module per concern (CONCERNS). The registry holds import
paths only; a module is imported on first use (the vendor SDKs take 0.2-0.7 s to import) and checked against its
Protocol below. Nothing outside a cloud's package asks which cloud it is: it asks the registry for the cloud's
module and calls it.

Optional members have their default here, so a cloud writes only what differs (as SkyPilot's sky/clouds/cloud.py
base does, without a base class): CloudProfile's fields with defaults; DEFAULTS, the members of a concern module a
cloud may leave out (and the modules it may leave out whole: gateway, rules, prices), which module() fills in; the
package's node module (node_module_file: none = the node calls no cloud API of its own); its pricing's USAGE
(usage_keys: none = only cost/usage.py's keys), BILL_COLUMNS (finance/reconcile.py: none = no bill format) and
BILL_EXPORT (where its console exports the bill, said when --bill is no file: none = "the cloud's console").

Adding a cloud = its package + one `register(name, package)` call (here for the shipped clouds; a package outside
gpufleet may also be named in $GPUFLEET_CLOUDS as `name=package[,name=package]`). tests/test_clouds.py names what
a registered cloud lacks. docs/adding-a-cloud.md lists what each module holds.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import os
from collections.abc import Callable, Iterable
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from msgspec import Struct, field

from gpufleet.errors import Problem, UserError, did_you_mean


class Capability(enum.StrEnum):
    """What a cloud may lack; each cloud's profile maps every member to None (supported) or the message preview shows."""

    GPU_METRIC_AUTOSCALING = "gpu_metric_autoscaling"
    SUBSCRIPTION_IN_AUTOSCALING = "subscription_in_autoscaling"
    LAYER7_LISTENER = "layer7_listener"
    GPU_HARDWARE_ALARMS = "gpu_hardware_alarms"


class InstanceMetadata(Struct, frozen=True):
    """How a node reads its own instance metadata (the node agent, images/node_agent.py: spot notice, role keys)."""

    url: str  # base of the metadata paths, ending in /
    spot_notice: str  # path under url: 404 until the cloud schedules the spot instance's reclaim
    token_url: str = ""  # hardened mode: PUT here for a session token ("": the cloud has none)
    token_ttl_header: str = ""
    token_header: str = ""
    role_credentials: str = ""  # path under url; + role name -> the role's temporary keys ("": not read)
    instance_id: str = ""  # path under url: the instance's own id ("": not read)


class NodeTool(Struct, frozen=True):
    """A cloud CLI the node's boot scripts call; every image recipe copied to the cloud installs it (images/recipes.py
    adds it to the recipe): a release binary mirrored at the recipe's tool_mirror + command, or a PyPI package."""

    command: str  # as the scripts call it, on PATH as /usr/local/bin/<command>
    name: str = ""  # the download step's name for a binary (default: command)
    sha256: str | None = None  # of the mirrored binary; `image build` refuses a missing one
    package: str = ""  # from PyPI instead, locked with the serving packages (the recipe's python_lock)
    version: str = ""


class CloudProfile(Struct, frozen=True):
    """Per-cloud facts the cloud-neutral code reads (node user-data, region templates, cost compare, catalogs)."""

    name: str
    role_kind: str
    disk_categories: dict[str, dict]  # spec tier -> provider disk inputs
    secret_cli: str
    object_scheme: str  # model.source scheme of the cloud's object storage
    node_tools: tuple[
        NodeTool, ...
    ]  # the cloud CLIs the node's boot scripts call; every recipe copied to the cloud installs them
    data_disk: str  # the data disk's device on the node (gpufleet-prepare formats it once and mounts it)
    catalog: Path  # regions, zones, instance types (stacks.catalog reads it)
    price_data: Path  # folder of <cloud>-<region>.yaml price catalogs and sources-<cloud>.yaml
    image_id_prefix: str  # how the cloud's image ids start (images/lock.json ids are checked against it)
    # type token -> outputs the provider computes, filled in by the mock engine ("x[]": a list)
    computed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    example_bucket_suffix: str = ""  # what `region new` appends to its example bucket name
    # what `region new` writes in alarms.contact_group without --contact-group, "{env}" filled in: a value of the form
    # the cloud's alarms notify (checks.contact_group_problem); "": the environment's default in defaults.yaml
    example_contact_group: str = ""
    instance_metadata: InstanceMetadata | None = None  # what the node agent reads on the node
    # The node agent's custom-metric API ("{region}" filled in on the node); "" with node_metrics_note saying why not.
    node_metrics_api: str = ""
    node_metrics_note: str = ""
    # The API the node agent ends its scaling group's lifecycle waits with ("{region}" filled in on the node); "" with
    # node_lifecycle_note saying why the node has none to end.
    node_lifecycle_api: str = ""
    node_lifecycle_note: str = ""
    # How the node's prepare program (images/templates/node/gpufleet-prepare.sh.j2) fetches a model.source of
    # object_scheme: bash run under `set -euo pipefail` with MODEL_SOURCE, GPUFLEET_ROLE and GPUFLEET_REGION in its
    # environment, writing the archive to "${archive}"; "" when the cloud's object storage is not fetched from the node.
    fetch_command: str = ""
    vendor: str = ""  # the vendor as help texts and messages name it ("Alibaba"; "": the cloud's name)
    provider_package: str = ""  # the Pulumi provider's distribution, whose version `gpufleet --version` shows
    # The pricing API (the prices module, `gpufleet catalog refresh`): its default endpoint as HOST[:PORT] ("{region}"
    # filled in; also the example --endpoint gives), the environment variables holding the user's API keys, and
    # whether it prices an instance type with an image (--image-id).
    price_endpoint: str = ""
    price_credentials: tuple[str, ...] = ()
    prices_take_image: bool = False
    # The Pulumi provider's config keys that hold a credential (`<name>:<key>` in a stack file; a field of an object
    # setting as `<key>.<field>`), each with where the provider also reads it from ("" when nowhere else): a stack file
    # holding one as plain text, not `secure:`, is refused (stacks/loader.py, docs/inputs.md).
    provider_credentials: dict[str, str] = field(default_factory=dict)

    @property
    def said(self) -> str:
        """The cloud as help texts and messages name it: its vendor, else its name."""
        return self.vendor or self.name


class ListCap(Struct, frozen=True):
    """The most items a list (or mapping) of the spec may hold on a cloud, and the cloud's quota or rule that sets it.

    A cloud's checks module holds them as LIST_CAPS (spec path -> ListCap); the loader checks them on the raw stack
    file before the model, so a list of 10,000 items fails at once, naming the quota."""

    most: int
    quota: str  # what the cloud allows, naming the quota and where it is documented
    fix: str = ""  # how to get under it, when more than "keep at most <most>"
    # "fleet": the quota is per fleet (a group, a security group); "region": per account in a region, shared by every
    # stack of the cloud in that region (gpufleet check and region new add them up, gpufleet/account.py)
    scope: str = "fleet"


# --- the contract, one Protocol per concern (modules are checked with isinstance) --------------------------


@runtime_checkable
class ProfileModule(Protocol):
    PROFILE: CloudProfile
    CAPABILITIES: dict[Capability, str | None]


@runtime_checkable
class ProgramModule(Protocol):
    def declare(self, fleet: Any, parent: Any) -> dict[str, Any]: ...


@runtime_checkable
class ChecksModule(Protocol):
    LIST_CAPS: dict[str, ListCap]  # spec path (autoscaling.schedules, tags, ...) -> the cloud's cap on its length

    def spec_problems(self, spec: Any) -> list[tuple[str, str]]: ...

    def notes(self, spec: Any) -> list[str]: ...

    # why the fleet's alarms would notify nobody with this alarms.contact_group (None: they notify it); `region new`
    # refuses what this names, preview notes it
    def contact_group_problem(self, contact: str) -> str | None: ...


@runtime_checkable
class PricingModule(Protocol):
    PRICED: dict[str, Any]  # type token -> (resource, PricingContext) -> [CostComponent]
    FREE: dict[str, str]  # type token -> why it has no bill
    FREE_PREFIXES: dict[str, str]

    def catalog_rows(self, ctx: Any) -> None: ...  # the non-instance rows of a region's derived price catalog


class UsageKey(Struct, frozen=True):
    """A quantity a resource's cost depends on that the program cannot know, declared next to the resource it prices
    (Infracost's usage keys): the keys every cloud reads in cost/resources.py USAGE, a cloud's own in its pricing
    module's optional USAGE. Set in a usage file; null (unknown) by default."""

    name: str
    what: str  # what the quantity is, per month
    unknown: str = ""  # the assumption `cost estimate` states while it is null ("" : shown as a unit price)
    lever: str = ""  # the overhead lever it is in `cost estimate` (cost/overhead.py), "" when none
    minimum: Decimal | None = None  # the least the vendor bills a month (a usage file below it is refused), None: 0
    minimum_how: str = ""  # what the minimum is, e.g. "1 CU each hour"


@runtime_checkable
class PricesModule(Protocol):
    def fetch(
        self, region: str, today: str, endpoint: str | None, protocol: str, image_id: str | None
    ) -> tuple[list[Any], list[str]]: ...


@runtime_checkable
class ImageModule(Protocol):
    def declare(self, recipe: Any, spec: Any, phase: str, sha: str | None, builder_id: str | None) -> dict[str, Any]: ...


@runtime_checkable
class FactsModule(Protocol):
    def view(self, inventory: Any) -> dict[str, Any]: ...  # the cloud-neutral facts the policy tests read


@runtime_checkable
class RulesModule(Protocol):
    """The provider contract's data (gpufleet/contract.py runs it; policy/ runs the same rules on a real deploy)."""

    RULES: tuple[Any, ...]  # contract.Rule per provider argument, each with its citation
    NAMES: dict[str, tuple[Any, ...]]  # kind (tag_key, tag_value, secret_name, bucket_name, user_data) -> rules
    CRON_ZONE_HOURS: int  # the zone the provider reads schedule times and recurrences in
    GAPS: dict[str, str]  # hardening the pinned provider cannot declare -> why (components/hardening.py notes them)
    DOCSTRING_OVERRIDES: dict[tuple[str, str], str]  # (resource, argument) -> why a rule departs from the SDK docstring


@runtime_checkable
class GatewayModule(Protocol):
    TRUSTED_PROXIES: tuple[str, ...]  # where the node's gateway trusts X-Forwarded-For from (images/gateway.py)


@runtime_checkable
class SimulationModule(Protocol):
    """How the fleet simulation (gpufleet.simulate) reads the cloud's declared scaling resources, and its timings."""

    TIMINGS: Path  # the cloud's timings file (each with seconds, quality, source)

    def behaviour(self, resources: list[dict], node: dict, node_completes: bool | None = None) -> Any: ...


CONCERNS: dict[str, type] = {
    "profile": ProfileModule,
    "checks": ChecksModule,
    "program": ProgramModule,
    "pricing": PricingModule,
    "prices": PricesModule,
    "image": ImageModule,
    "facts": FactsModule,
    "rules": RulesModule,
    "gateway": GatewayModule,
    "simulation": SimulationModule,
}

# The names' kinds a rules module's NAMES covers (contract.name_problems).
NAME_KINDS = ("tag_key", "tag_value", "secret_name", "bucket_name", "user_data")


def _no_notes(spec: Any) -> list[str]:
    return []


def _any_contact(contact: str) -> str | None:
    return None


def _no_prices(cloud: str) -> Callable[..., tuple[list[Any], list[str]]]:
    def fetch(
        region: str, today: str, endpoint: str | None = None, protocol: str = "https", image_id: str | None = None
    ) -> tuple[list[Any], list[str]]:
        raise UserError([Problem("--cloud", "", f"{cloud} has no pricing API; prices come from `catalog build`")])

    return fetch


# concern -> member -> its default (given the cloud's name) when the cloud's module leaves it out; a concern all of
# whose members have one may be left out whole.
DEFAULTS: dict[str, dict[str, Callable[[str], Any]]] = {
    "checks": {
        "notes": lambda cloud: _no_notes,  # nothing to tell about a fleet beyond the capabilities
        "contact_group_problem": lambda cloud: _any_contact,  # the alarms notify any contact group the spec accepts
        "LIST_CAPS": lambda cloud: {},  # no list of the spec is capped
    },
    "rules": {  # no provider contract yet: a cloud starts here and adds each rule with its citation
        "RULES": lambda cloud: (),
        "NAMES": lambda cloud: {kind: () for kind in NAME_KINDS},
        "CRON_ZONE_HOURS": lambda cloud: 0,  # schedule times read in UTC
        "GAPS": lambda cloud: {},
        "DOCSTRING_OVERRIDES": lambda cloud: {},
    },
    # the load balancer passes the client's connection through: the node's gateway trusts no proxy's X-Forwarded-For
    "gateway": {"TRUSTED_PROXIES": lambda cloud: ()},
    "pricing": {"FREE_PREFIXES": lambda cloud: {}},  # no family of free types beyond cost/resources.py's
    "prices": {"fetch": _no_prices},  # no pricing API: `catalog refresh` says so
}

_ENTRIES: dict[str, dict[str, str]] = {}
_CHECKED: dict[tuple[str, str], ModuleType] = {}  # (cloud, concern) -> its module, imported and checked


def register(name: str, package: str) -> None:
    """Register a cloud: its concern modules are `<package>.<concern>`."""
    _ENTRIES[name] = {concern: f"{package}.{concern}" for concern in CONCERNS}
    _CHECKED.clear()


# The optional node module of a cloud package (`<package>.node_agent`, standard library only): the cloud's part of the
# node agent (images/node_agent.py), shipped beside it by the image. A cloud whose profile names a node metrics or
# lifecycle API must have one: publisher(agent, cfg, env, cloud) and lifecycle(agent, cfg, env, cloud, metadata).
NODE_MODULE = "node_agent"
NODE_MEMBERS = {"node_metrics_api": "publisher", "node_lifecycle_api": "lifecycle"}


def unregister(name: str) -> None:
    _ENTRIES.pop(name, None)
    _CHECKED.clear()


register("alicloud", "gpufleet.components.alicloud")
register("tencentcloud", "gpufleet.components.tencentcloud")
for _item in filter(None, os.environ.get("GPUFLEET_CLOUDS", "").split(",")):
    _name, _, _package = _item.partition("=")
    register(_name.strip(), _package.strip())


def names() -> tuple[str, ...]:
    return tuple(_ENTRIES)


def spoken(words: Iterable[str], conj: str = "or") -> str:
    """Words as help texts list them: 'a', 'a or b', 'a, b or c'."""
    *head, last = list(words) or [""]
    return f"{', '.join(head)} {conj} {last}" if head else last


def unknown(cloud: str) -> str | None:
    """Why `cloud` names no registered cloud (the message every `--cloud`-like input gives), None when it names one."""
    if cloud in _ENTRIES:
        return None

    return f"unknown cloud {cloud!r}" + did_you_mean(cloud, names())


def entries() -> dict[str, dict[str, str]]:
    return {k: dict(v) for k, v in _ENTRIES.items()}


class _Defaulted(ModuleType):
    """A cloud's concern module with the registry's defaults for the members it leaves out (for a module the package
    does not have: the defaults alone). Its own members are read from the module itself, as they are now."""

    def __init__(self, name: str, mod: ModuleType | None, defaults: dict[str, Any]) -> None:
        super().__init__(name, mod.__doc__ if mod is not None else "The registry's defaults (gpufleet/registry.py DEFAULTS).")
        vars(self).update(defaults, _gpufleet_module=mod)

    def __getattr__(self, member: str) -> Any:
        mod = vars(self)["_gpufleet_module"]
        if mod is None:
            raise AttributeError(f"{self.__name__} does not exist; the registry gives only its defaults, not {member!r}")
        return getattr(mod, member)


def module(cloud: str, concern: str) -> ModuleType:
    """The cloud's module for that concern, imported now, completed with DEFAULTS for the members it leaves out and
    checked against the concern's Protocol (a module with nothing to fill in is returned as it is)."""
    path = _ENTRIES[cloud][concern]
    mod = _CHECKED.get((cloud, concern))
    if mod is None or mod.__name__ != path:
        found = _import(path, concern)
        absent = {k: v(cloud) for k, v in DEFAULTS.get(concern, {}).items() if found is None or not hasattr(found, k)}
        mod = _Defaulted(path, found, absent) if absent else found
        if mod is None or not isinstance(mod, CONCERNS[concern]):
            raise TypeError(f"{cloud}: {path} does not fulfil {CONCERNS[concern].__name__}: {', '.join(_missing(mod, concern))}")
        _CHECKED[(cloud, concern)] = mod
    return mod


def _import(path: str, concern: str) -> ModuleType | None:
    """The module at `path`; None when it does not exist and the concern may be left out whole (see DEFAULTS)."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name == path and _optional(concern):
            return None
        raise


def _optional(concern: str) -> bool:
    return not set(_members(concern)) - set(DEFAULTS.get(concern, {}))


def _members(concern: str) -> list[str]:
    proto = CONCERNS[concern]
    return sorted({*proto.__annotations__, *(k for k, v in vars(proto).items() if not k.startswith("_") and callable(v))})


def _missing(mod: ModuleType | None, concern: str) -> list[str]:
    """The concern's members `mod` lacks that have no default."""
    return [m for m in _members(concern) if not hasattr(mod, m) and m not in DEFAULTS.get(concern, {})]


def node_module_file(cloud: str) -> Path | None:
    """The source file of the cloud's node module (found, not imported: it runs on the node), or None."""
    package = _ENTRIES[cloud]["profile"].rpartition(".")[0]
    spec = importlib.util.find_spec(f"{package}.{NODE_MODULE}")
    return Path(spec.origin) if spec is not None and spec.origin else None


def profile(cloud: str) -> CloudProfile:
    return module(cloud, "profile").PROFILE


def capabilities(cloud: str) -> dict[Capability, str | None]:
    return module(cloud, "profile").CAPABILITIES


def program(cloud: str) -> ModuleType:
    return module(cloud, "program")


def list_caps(cloud: str) -> dict[str, ListCap]:
    """The cloud's caps on the spec's lists (see ListCap; default: none)."""
    return dict(module(cloud, "checks").LIST_CAPS)


def usage_keys(cloud: str) -> tuple[UsageKey, ...]:
    """The cloud's own usage keys (default: none, its pricing reads only the keys of cost/usage.py)."""
    return tuple(getattr(module(cloud, "pricing"), "USAGE", ()))


def spec_problems(spec) -> list[tuple[str, str]]:
    """What the spec's cloud cannot declare as written (field path, message)."""
    return module(spec.cloud, "checks").spec_problems(spec)


def notes(cloud: str, spec=None) -> list[str]:
    """What `gpufleet preview` tells about the cloud (its capabilities) and, given a spec, about this fleet on it."""
    out = [f"{cap.value}: {msg}" for cap, msg in capabilities(cloud).items() if msg]
    return out + (module(cloud, "checks").notes(spec) if spec is not None else [])


def problems(clouds: tuple[str, ...] | None = None) -> list[str]:
    """What a registered cloud lacks: a module that does not import, a member of its Protocol, a capability value."""
    out = []
    for cloud in names() if clouds is None else clouds:
        if cloud not in _ENTRIES:
            out.append(f"{cloud}: not registered")
            continue
        for concern, path in _ENTRIES[cloud].items():
            try:
                mod = _import(path, concern)
            except ImportError as exc:
                out.append(f"{cloud}: {concern} module {path} does not import ({exc})")
                continue
            if mod is None:  # left out whole: the registry's defaults
                continue
            out += [f"{cloud}: {path} has no {m}" for m in _missing(mod, concern)]
            if concern == "profile" and isinstance(getattr(mod, "PROFILE", None), CloudProfile):
                out += _node_problems(cloud, mod.PROFILE)
            if concern == "profile" and hasattr(mod, "CAPABILITIES"):
                out += [
                    f"{cloud}: {path}.CAPABILITIES has no value for {cap.value} (None = supported, else the message)"
                    for cap in Capability
                    if cap not in mod.CAPABILITIES
                ]
    return out


def _node_problems(cloud: str, prof: CloudProfile) -> list[str]:
    """A node API in the profile without the node module's function that calls it."""
    path = node_module_file(cloud)
    mod = importlib.import_module(f"{_ENTRIES[cloud]['profile'].rpartition('.')[0]}.{NODE_MODULE}") if path else None
    return [
        f"{cloud}: profile.{api} is set but "
        + (f"its {NODE_MODULE} module has no {fn}()" if mod else f"the package has no {NODE_MODULE}.py (with {fn}())")
        for api, fn in NODE_MEMBERS.items()
        if getattr(prof, api) and not callable(getattr(mod, fn, None))
    ]
