"""The usage profile: quantities a resource's cost depends on that the program cannot know.

Defaults (cost/data/usage-defaults.yaml) < the stack's usage file < --usage FILE. The stack's usage file is the one
its stack file names under the config key `gpufleet:usage` (a path relative to the project, so it follows a stack
file that is copied or renamed), else cost/usage/<stack>.yaml; with neither, a note says the defaults are used.
A key left null is unknown: its cost line shows the unit price and no monthly cost.
"""

from __future__ import annotations

import os
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

from msgspec import Struct

from gpufleet import cron, inputs, registry
from gpufleet.cost import resources
from gpufleet.cost.resources import shown_nodes
from gpufleet.errors import Problem, UserError, did_you_mean
from gpufleet.files import package_file
from gpufleet.registry import UsageKey
from gpufleet.stacks import rollout
from gpufleet.stacks.loader import USAGE_KEY, read_stack_config, written
from gpufleet.stacks.project import project_root
from gpufleet.validation import load_fleet

HERE = Path(__file__).parent
DEFAULTS = HERE / "data" / "usage-defaults.yaml"


class Usage(Struct, frozen=True):
    """The usage profile's values by key: the keys every cloud's pricing reads (cost/resources.py USAGE, each declared
    next to what it prices) and each cloud's own (its pricing module's USAGE, registry.usage_keys). A key read as an
    attribute (`usage.lb_egress_gb`) or with get(); None (also when never given) is unknown. Built with of() (keys by
    name, checked); `Usage()` is the profile that knows nothing."""

    values: tuple[tuple[str, Decimal], ...] = ()  # the known keys, sorted; no None
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # e.g. that no usage file applies to the stack
    origins: tuple[tuple[str, str], ...] = ()  # key -> the usage file that set it (not the defaults)

    @classmethod
    def of(
        cls,
        *,
        values: tuple[tuple[str, Decimal], ...] = (),
        files: tuple[str, ...] = (),
        notes: tuple[str, ...] = (),
        origins: tuple[tuple[str, str], ...] = (),
        **keys: Decimal | None,
    ) -> Usage:
        """Keys by name, over `values` (a key given as None is unknown); a key no pricing declares is refused."""
        given = dict(values) | keys
        unknown = [k for k in given if k not in declared()]
        if unknown:
            raise TypeError(f"Usage: unknown usage key {unknown[0]!r}")
        return cls(
            values=tuple(sorted((k, v) for k, v in given.items() if v is not None)),
            files=tuple(files),
            notes=tuple(notes),
            origins=tuple((k, f) for k, f in origins if k not in keys),  # a key set by name comes from no file
        )

    def with_keys(self, **keys: Decimal | None) -> Usage:
        """This profile with those keys set by name (they then come from no file)."""
        return Usage.of(values=self.values, files=self.files, notes=self.notes, origins=self.origins, **keys)

    def get(self, key: str) -> Decimal | None:
        """A usage key's value (None: unknown)."""
        return dict(self.values).get(key)

    def __getattr__(self, name: str) -> Decimal | None:
        if not name.startswith("_") and name in declared():
            return dict(self.values).get(name)
        raise AttributeError(name)

    def known(self, cloud: str | None = None) -> dict[str, Decimal | None]:
        """The keys and their values: every cloud's keys, then `cloud`'s own (all clouds' when None)."""
        return {k.name: self.get(k.name) for k in keys_of(cloud)}


USAGE_MAX = Decimal(10) ** 12  # no usage quantity of a month comes near a trillion (GB, hours, nodes)


def keys_of(cloud: str | None = None) -> list[UsageKey]:
    """The usage keys a cloud's estimate reads: every cloud's (cost/resources.py USAGE), then the cloud's own (every
    registered cloud's when None)."""

    clouds = [cloud] if cloud else registry.names()
    own = [k for c in clouds for k in registry.usage_keys(c)]
    return list(resources.USAGE) + [k for k in own if k.name not in {s.name for s in resources.USAGE}]


def declared() -> dict[str, UsageKey]:
    """Every usage key any registered cloud's pricing reads, by name."""
    return {k.name: k for k in keys_of()}


CONFIG_KEY = USAGE_KEY  # in a stack file's `config:`: the stack's usage file, relative to the project (stacks/loader.py)


def missing_usage() -> str:
    """The fix of a --usage file that does not exist: what it holds, and where its format is described."""
    return (
        "write one: YAML `usage key: number` lines, each overriding the stack's usage file and the defaults, e.g. "
        f"`lb_egress_gb: 500`; the keys are those of {package_file(DEFAULTS)} and the clouds' own (docs/cost-reports.md: "
        "Usage files follow the stack)"
    )


def _read(path: Path, shown: str, missing: inputs.Missing = "") -> dict:
    doc = inputs.load_mapping(path, shown, missing, what="a mapping of usage keys to numbers")
    problems: list[Problem] = []
    out: dict[str, Decimal | None] = {}
    keys = declared()
    for k, v in doc.items():
        if k not in keys:
            problems.append(Problem(shown, str(k), "unknown usage key" + did_you_mean(str(k), keys)))
            continue
        if v is None:
            out[k] = None
            continue
        # "5" was priced as 5 GB (review F11): a number is written as one, as in the spec; an unquoted 1e6, which YAML
        # reads as text (its floats need a dot), is still read as the number it is
        if isinstance(v, str) and not re.fullmatch(r"[-+]?[\d.]+[eE][-+]?\d+", v):
            problems.append(Problem(shown, k, f"is text {v[:40]!r}: write the number without quotes (e.g. 5), or null"))
            continue
        try:
            d = Decimal(str(v)) if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None
        except InvalidOperation:
            d = None
        if d is None or not d.is_finite():
            problems.append(Problem(shown, k, f"must be a finite number, not {inputs.given(v)}"))
            continue
        if d < 0 or d > USAGE_MAX:
            problems.append(Problem(shown, k, f"must be a number >= 0 and at most 10**12, not {v!r}"))
            continue
        least = keys[k].minimum
        if least is not None and d < least:  # priced below what the vendor bills
            problems.append(
                Problem(
                    shown,
                    k,
                    f"{d} is below the documented minimum of {least} ({keys[k].minimum_how}): give at least {least}, "
                    "or null for the minimum",
                )
            )
            continue
        out[k] = d
    if problems:
        raise UserError(problems)
    return out


def _stack_dir() -> Path:
    """cost/usage/ of the project (user state, read from the project root only)."""

    return project_root() / "cost" / "usage"


def stack_usage_file(stack: str, stack_dir: Path | None = None) -> tuple[Path | None, str, str]:
    """(the stack's usage file or None, how it is shown, a note when there is none) for a stack name."""

    shown, config = read_stack_config(stack)
    named = config.get(CONFIG_KEY)
    fix = f"give a usage file's path relative to the project, e.g. `{CONFIG_KEY}: cost/usage/{stack}.yaml`"
    if named is not None:
        field = f"config.{CONFIG_KEY}"
        if not isinstance(named, str) or not named.strip():
            raise UserError([Problem(shown, field, f"expected a file path, got {written(named)}: {fix}")])
        if Path(named).is_absolute():
            raise UserError([Problem(shown, field, f"{named} is an absolute path: {fix}")])
        if os.path.normpath(named).split(os.sep)[0] == "..":  # ../../etc/hostname was read, from outside the project
            raise UserError([Problem(shown, field, f"{named} leads out of the project folder: {fix}")])
        root = project_root()
        path = root / named
        if bad := inputs.link_problem(path, named):
            raise UserError([Problem(shown, field, f"{named} {bad.message}")])
        if os.path.isdir(path):
            raise UserError([Problem(shown, field, f"{named} is a folder, not a file: {fix}")])
        if not os.path.isfile(path):  # Path.is_file raises on a name of > 255 bytes (ENAMETOOLONG)
            raise UserError([Problem(shown, field, f"no such file {named} (from the project folder {root}): {fix}")])
        return path, named, ""
    default = (stack_dir or _stack_dir()) / f"{stack}.yaml"
    if os.path.lexists(default):  # a link that leads nowhere too: its reader names it (not the defaults, silently)
        return default, f"cost/usage/{default.name}", ""
    return (
        None,
        "",
        f"no usage file for {stack} ({shown} has no `{CONFIG_KEY}` key and there is no cost/usage/{stack}.yaml): "
        f"the defaults of {package_file(DEFAULTS)} are used",
    )


def load(stack: str | None = None, usage_file: str | None = None, stack_dir: Path | None = None) -> Usage:
    values: dict = {}
    files: list[str] = []
    notes: list[str] = []
    layers: list[tuple[Path, str, inputs.Missing]] = [(DEFAULTS, "cost/data/usage-defaults.yaml", "")]
    if stack:
        path, shown, note = stack_usage_file(stack, stack_dir)
        if path is not None:
            layers.append((path, shown, ""))
        elif note and not usage_file:
            notes.append(note)
    if usage_file:
        layers.append((Path(usage_file), usage_file, missing_usage))
    origins: dict[str, str] = {}
    for path, shown, missing in layers:
        layer = _read(path, shown, missing)
        if path != DEFAULTS and layer:
            files.append(shown)
            origins.update(dict.fromkeys(layer, shown))
        values.update(layer)
    u = Usage.of(values=tuple(values.items()), files=tuple(files), notes=tuple(notes), origins=tuple(sorted(origins.items())))
    if stack and dict(u.origins).get("replicas_average"):
        if problems := fleet_problems(u, load_fleet(stack).spec, read_stack_config(stack)[0]):
            raise UserError(problems)
    return u


def fleet_problems(u: Usage, spec, stack_file: str = "the stack") -> list[Problem]:
    """What a usage file says that the stack it is applied to cannot run: an average of running nodes outside the
    group's replicas (min to the highest max, a schedule's included; with a rollout, the fleet's current group, the one
    the average is of)."""
    avg, shown = u.replicas_average, dict(u.origins).get("replicas_average")
    if avg is None or shown is None:
        return []
    if getattr(spec, "rollout", None) is not None:
        spec = rollout.current_spec(spec)
    lo, hi = spec.replicas.min, max([spec.replicas.max, *(s.max for s in spec.autoscaling.schedules)])
    if lo <= avg <= hi:
        return []
    return [
        Problem(
            shown,
            "replicas_average",
            f"{avg} average running nodes is outside the replicas of {stack_file}, min {lo} to max {hi}: an average lies "
            f"between the fewest and the most nodes the fleet runs; give a value from {lo} to {hi} (or change the "
            "stack's replicas)",
        )
    ]


# --- average running replicas from the fleet's weekly schedules --------------------------------

WEEK_MIN = 7 * 24 * 60


def cron_week_minutes(text: str) -> list[int] | None:
    """Minutes of the week (Monday 00:00 = 0) a 5-field cron fires, or None if it depends on the date (a day of the
    month or some months). Read by gpufleet.cron, the one parser of the spec's crons (`gpufleet check` validates with
    it): 7 is Sunday as 0 is, and day names (MON-FRI) are days (this module's own reader made `1-7` the empty `1-0`
    and raised on a name)."""
    c = cron.parse(text)
    if not c.any_day or len(c.months) < 12:
        return None
    monday_based = sorted({(d - 1) % 7 for d in c.weekdays})  # cron 0 = Sunday
    return sorted(d * 1440 + h * 60 + m for d in monday_based for h in c.hours for m in c.minutes)


def schedule_average(desired: int, schedules: list[tuple[str, int]]) -> tuple[Decimal, str]:
    """Time-weighted running nodes over a week: each schedule sets the count when it fires.

    schedules: (cron, desired count). Returns (average, how it was computed).
    """
    if not schedules:
        return Decimal(desired), f"desired capacity {desired} all month (no schedules)"
    events = []
    for text, count in schedules:
        minutes = cron_week_minutes(text)
        if minutes is None:
            return Decimal(desired), f"desired capacity {desired}: schedule {text!r} depends on the date; set replicas_average"
        events += [(m, count) for m in minutes]
    events.sort()
    total = 0
    for i, (m, count) in enumerate(events):
        nxt = events[i + 1][0] if i + 1 < len(events) else events[0][0] + WEEK_MIN
        total += (nxt - m) * count
    avg = Decimal(total) / Decimal(WEEK_MIN)  # exact: rounded only where printed (resources.shown_nodes)
    how = "; ".join(f"{c!r} -> {n}" for c, n in schedules)
    return avg, f"{shown_nodes(avg)} nodes on average: week weighted by the schedules ({how}, UTC)"
