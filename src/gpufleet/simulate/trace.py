"""Traffic over time: a trace file (CSV or JSON rows) or a built-in profile (day, step, spike).

CSV: a header row with `time` (ISO 8601 with a zone, or seconds from the start) and `requests_per_s`, optionally
`prompt_tokens` and `output_tokens` (means per request). JSON: a list of objects with the same keys (or an object with
`rows`). Rows are sorted, evenly spaced (the first gap is the step; a longer gap is refused), rates non-negative. A bad
trace is a UserError naming the file, the row (1 = the first data row) and the column. Rates and token counts are at
most MAX_VALUE (a billion: more is a unit mistake, and would print a node count hundreds of digits long).

Limits (one budget: MAX_ROWS steps of the built-in profiles' PROFILE_STEP_S): at most MAX_ROWS rows and MAX_SPAN_S
of simulated time (578.7 days; the engine's alarms, scalers and health checks run on their own periods, so its
work grows with the simulated time whatever the rows), at most MAX_RECLAIMS_PER_HOUR spot reclaims an hour (one a
profile step: as many as MAX_ROWS over the longest trace), and the trace's dates between EARLIEST and LATEST (the
schedules' firings are searched up to cron.SEARCH_DAYS past the end; Python's dates end at year 9999).
"""

from __future__ import annotations

import csv
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from msgspec import Struct

from gpufleet import inputs
from gpufleet.cron import SEARCH_DAYS
from gpufleet.errors import Problem, UserError
from gpufleet.sizing.capacity import MAX_PEAK_QPS

COLUMNS = ("time", "requests_per_s")
OPTIONAL = ("prompt_tokens", "output_tokens")
PROFILES = ("day", "step", "spike")
PROFILE_STEP_S = 10.0
MAX_ROWS = 5_000_000
MAX_BYTES = 1024 * 1024 * 1024  # 5,000,000 rows of an ISO time, a rate and two token counts fit in about 300 MiB
MAX_SPAN_S = MAX_ROWS * PROFILE_STEP_S
MAX_RECLAIMS_PER_HOUR = 3600 / PROFILE_STEP_S
MAX_VALUE = MAX_PEAK_QPS  # a rate or a mean token count per request: more than a billion is a unit mistake
EARLIEST = datetime(1, 1, 1, tzinfo=UTC) + timedelta(days=2)  # a day either side for the zones
LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=SEARCH_DAYS + 2)
MAX_SECONDS = (LATEST - EARLIEST).total_seconds()  # a time in seconds no date range could hold


class Trace(Struct, frozen=True):
    start: datetime  # wall-clock time of the first row (UTC); schedules fire against it
    step_s: float
    rates: list[float]  # requests/s, one per step
    output_tokens: list[float] | None = None  # mean output tokens per request, one per step
    prompt_tokens: list[float] | None = None
    source: str = ""
    timed: bool = False  # its rows carry their own ISO times: the start is theirs (plan scaling refuses --start)

    @property
    def duration_s(self) -> float:
        return self.step_s * len(self.rates)


QUOTED = "is text: write the number without quotes (a JSON trace's numbers are JSON numbers)"


def _number(text, shown: str, row: int, col: str, problems: list[Problem], is_json: bool = False) -> float | None:
    if text is None:  # a CSV row with fewer values than the header, a JSON row without the key
        problems.append(Problem(shown, f"row {row}: {col}", "missing: give a value in every row"))
        return None
    if isinstance(text, bool):  # a JSON true / false: float() reads it as 1 / 0
        problems.append(Problem(shown, f"row {row}: {col}", f"{json.dumps(text)} is not a number"))
        return None
    if is_json and isinstance(text, str):  # "1" was read as 1 (review F11), as true is refused
        problems.append(Problem(shown, f"row {row}: {col}", f"{json.dumps(text)[:40]} {QUOTED}"))
        return None
    try:
        v = float(text)
    except (TypeError, ValueError):
        problems.append(Problem(shown, f"row {row}: {col}", f"{text!r} is not a number"))
        return None
    if not math.isfinite(v) or v < 0:
        problems.append(Problem(shown, f"row {row}: {col}", f"{text!r} must be a finite number >= 0"))
        return None
    if v > MAX_VALUE:
        problems.append(Problem(shown, f"row {row}: {col}", f"{text!r} must be at most {MAX_VALUE:g} (check the unit)"))
        return None
    return v


def _time(text, shown: str, row: int, problems: list[Problem], is_json: bool = False) -> float | datetime | None:
    s = str(text).strip()
    try:
        seconds = float(text) if isinstance(text, (int, float)) and not isinstance(text, bool) else float(s)
    except ValueError:
        pass
    else:
        if is_json and isinstance(text, str):  # seconds in quotes: a JSON time is a number or an ISO 8601 text
            problems.append(Problem(shown, f"row {row}: time", f"{json.dumps(text)[:40]} {QUOTED}, or an ISO 8601 time"))
            return None
        if not math.isfinite(seconds) or abs(seconds) > MAX_SECONDS:
            why = "is out of range" if math.isfinite(seconds) else "is not a finite number"
            problems.append(Problem(shown, f"row {row}: time", f"{s!r} {why}: give seconds within +-{MAX_SECONDS:.4g}"))
            return None
        return seconds
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        problems.append(Problem(shown, f"row {row}: time", f"{s!r} is neither ISO 8601 with a zone nor seconds from the start"))
        return None
    if t.tzinfo is None:
        problems.append(Problem(shown, f"row {row}: time", f"{s!r} has no zone: write it as e.g. 2026-12-04T09:00:00+08:00"))
        return None
    if not EARLIEST <= t <= LATEST:
        problems.append(Problem(shown, f"row {row}: time", f"{s!r} is out of range: from {EARLIEST.date()} to {LATEST.date()}"))
        return None
    return t.astimezone(UTC)


def _check_header(keys: set[str], shown: str) -> None:
    missing = [c for c in COLUMNS if c not in keys]
    unknown = sorted(k for k in keys if k not in COLUMNS + OPTIONAL)
    if missing or unknown:
        msg = []
        if missing:
            msg.append("missing column " + ", ".join(missing))
        if unknown:
            msg.append("unknown column " + ", ".join(unknown))
        raise UserError([Problem(shown, "header", "; ".join(msg) + f" (columns: {', '.join(COLUMNS + OPTIONAL)})")])


def rows_to_trace(rows: list[dict], shown: str, default_start: datetime, is_json: bool = False) -> Trace:
    problems: list[Problem] = []
    if not rows:  # a JSON trace has no header row (it said to give one: review F9)
        give = (
            'a list of at least two rows, e.g. [{"time": 0, "requests_per_s": 2}, ...]'
            if is_json
            else "a header row and at least two data rows"
        )
        raise UserError([Problem(shown, "", f"no rows: give {give}")])
    if len(rows) > MAX_ROWS:
        raise UserError([Problem(shown, "", f"{len(rows)} rows: at most {MAX_ROWS}")])
    keys = set(rows[0])
    _check_header(keys, shown)
    times, rates = [], []
    extra: dict[str, list[float]] = {c: [] for c in OPTIONAL if c in keys}
    for i, r in enumerate(rows, start=1):
        times.append(_time(r.get("time"), shown, i, problems, is_json))
        rates.append(_number(r.get("requests_per_s"), shown, i, "requests_per_s", problems, is_json))
        for c in extra:
            extra[c].append(_number(r.get(c), shown, i, c, problems, is_json) or 0.0)
        if len(problems) >= 10:
            break
    if problems:
        raise UserError(problems)
    kinds = {type(t) for t in times}
    if len(kinds) > 1:
        raise UserError([Problem(shown, "time", "mixes ISO 8601 times and seconds: use one form")])
    if len(times) < 2:
        raise UserError([Problem(shown, "", "one row: give at least two rows (the step is the time between them)")])
    first = times[0]
    if isinstance(first, datetime):
        start = first
        secs = [(t - first).total_seconds() for t in times if isinstance(t, datetime)]
    else:
        start = default_start.astimezone(UTC)  # --start in any zone: the same instant, Trace.start is UTC
        secs = [float(t) - float(first or 0.0) for t in times if isinstance(t, float)]
    step = secs[1] - secs[0]
    if step <= 0:
        raise UserError([Problem(shown, "row 2: time", "not after row 1: sort the rows by time")])
    if problems := span_problems(start, step * len(secs), shown, f"row {len(secs)}: time"):
        raise UserError(problems)
    for i in range(1, len(secs)):
        gap = secs[i] - secs[i - 1]
        if gap <= 0:
            raise UserError([Problem(shown, f"row {i + 1}: time", f"not after row {i}: sort the rows by time")])
        if abs(gap - step) > 1e-6 * max(1.0, step):
            raise UserError(
                [
                    Problem(
                        shown,
                        f"row {i + 1}: time",
                        f"{gap:g} s after row {i}, the step is {step:g} s: fill the gap (evenly spaced rows)",
                    )
                ]
            )
    return Trace(
        start,
        step,
        [r or 0.0 for r in rates],
        extra.get("output_tokens"),
        extra.get("prompt_tokens"),
        source=shown,
        timed=isinstance(first, datetime),
    )


def span_problems(start: datetime, span_s: float, shown: str, field: str) -> list[Problem]:
    """A trace of span_s seconds from start must be one the engine can run: at most MAX_SPAN_S, its dates between
    EARLIEST and LATEST (plan scaling's --start is checked with the longest span, a trace file with its own)."""
    if span_s > MAX_SPAN_S:
        return [
            Problem(
                shown,
                field,
                f"the trace lasts {span_s / 86400:.4g} days (each row lasts the step to the next): at most {MAX_SPAN_S / 86400:.4g} days "
                f"({MAX_ROWS} steps of {PROFILE_STEP_S:g} s); split it or use a coarser step over a shorter time",
            )
        ]
    if start < EARLIEST or span_s > (LATEST - start).total_seconds():
        last = LATEST - timedelta(seconds=span_s)
        return [
            Problem(
                shown,
                field,
                f"{start.isoformat()} plus {span_s / 86400:.4g} days of trace leaves the dates the simulation can "
                f"represent: start between {EARLIEST.date()} and {last.date()}",
            )
        ]
    return []


def read(path: Path, default_start: datetime) -> Trace:
    shown = str(path)
    # the one reader of input files: a folder, a name too long or bytes that are not UTF-8 are named as elsewhere
    # (this said "cannot read: [Errno 21] Is a directory: '<the path again>'"); a trace may be larger than a YAML file
    text = inputs.read_text(path, shown, max_bytes=MAX_BYTES)
    if path.suffix.lower() == ".json" or text.lstrip().startswith(("[", "{")):
        data = inputs.parse_json(text, shown)  # duplicate keys, NaN and Infinity refused, as in every JSON input
        if isinstance(data, dict):
            data = data.get("rows")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise UserError([Problem(shown, "", "JSON must be a list of rows (objects with time, requests_per_s)")])
        return rows_to_trace(data, shown, default_start, is_json=True)
    reader = csv.DictReader(text.splitlines())
    rows = [dict(r) for r in inputs.csv_rows(reader, shown, "write one time,requests_per_s a line")]
    if reader.fieldnames is None:
        raise UserError([Problem(shown, "header", "empty file: give a header row time,requests_per_s")])
    if twice := sorted({c for c in reader.fieldnames if reader.fieldnames.count(c) > 1}):  # the last copy was read
        raise UserError([Problem(shown, "header", f"column {c!r} appears twice: keep one") for c in twice])
    if longer := [i for i, r in enumerate(rows, start=1) if None in r][:10]:  # row 1 only was checked
        raise UserError([Problem(shown, f"row {i}", "more values than header columns") for i in longer])
    if not rows:
        _check_header(set(reader.fieldnames), shown)  # a wrong header first, then the missing rows
    return rows_to_trace(rows, shown, default_start)


def profile(
    name: str, low: float, start: datetime, step_s: float = PROFILE_STEP_S, day_shape: list[tuple[float, float]] | None = None
) -> Trace:
    """A built-in trace: `step` (low for an hour, 5x low for an hour, low for three hours), `spike` (low, 10x low for
    five minutes, low), `day` (24 h: `day_shape` as (UTC hour, multiple of low) points, linear between them).

    The day follows UTC, as the schedules' cron does: a start given in another zone is the same instant in UTC (its
    local hour read as a UTC hour moved the load by the offset against the schedules: 08:00+08:00 began at the peak)."""
    start = start.astimezone(UTC)
    if name == "step":
        parts = [(3600, 1.0), (3600, 5.0), (3 * 3600, 1.0)]
    elif name == "spike":
        parts = [(3600, 1.0), (300, 10.0), (3 * 3600, 1.0)]
    elif name == "day":
        shape = day_shape or [(0.0, 1.0), (24.0, 1.0)]
        n = int(24 * 3600 / step_s)
        rates = []
        for i in range(n):
            h = (start.hour + start.minute / 60 + i * step_s / 3600) % 24
            rates.append(low * _interp(shape, h))
        return Trace(start, step_s, rates, source="profile day")
    else:
        raise UserError([Problem("--profile", "", f"unknown {name!r}: one of {', '.join(PROFILES)}")])
    rates = []
    for secs, k in parts:
        rates += [low * k] * int(secs / step_s)
    return Trace(start, step_s, rates, source=f"profile {name}")


def _interp(points: list[tuple[float, float]], h: float) -> float:
    pts = sorted(points)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= h <= x1:
            return y0 + (y1 - y0) * (h - x0) / (x1 - x0) if x1 > x0 else y1
    return pts[-1][1]


def next_start(now: datetime) -> datetime:
    """The default start of a profile: the next whole hour after now (UTC)."""
    return (now.astimezone(UTC) + timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
