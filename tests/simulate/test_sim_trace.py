"""Trace files: the good forms, and every bad one named by row and column (a UserError: exit 2, one line each)."""

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gpufleet.errors import UserError
from gpufleet.simulate import trace

START = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)


def read(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return trace.read(p, START)


def problems(tmp_path, text, name="t.csv"):
    with pytest.raises(UserError) as e:
        read(tmp_path, text, name)
    return [str(p) for p in e.value.problems]


def test_csv_with_zone_and_seconds(tmp_path):
    t = read(tmp_path, "time,requests_per_s,output_tokens\n2026-12-07T09:00:00+08:00,1,100\n2026-12-07T09:00:10+08:00,2.5,120\n")
    assert t.start == datetime(2026, 12, 7, 1, 0, tzinfo=UTC) and t.step_s == 10 and t.rates == [1.0, 2.5]
    assert t.output_tokens == [100.0, 120.0]
    s = read(tmp_path, "time,requests_per_s\n0,1\n60,2\n120,3\n")
    assert s.start == START and s.step_s == 60 and s.duration_s == 180


def test_a_start_in_another_zone_is_the_same_instant_in_utc(tmp_path):
    """The day profile read the local hour of --start as a UTC hour: 08:00+08:00 (00:00 UTC) began at the peak."""
    local = START.astimezone(timezone(timedelta(hours=8)))  # 2026-12-07T08:00:00+08:00
    shape = [(0.0, 1.0), (8.0, 5.0), (24.0, 1.0)]
    utc_day, local_day = trace.profile("day", 2.0, START, day_shape=shape), trace.profile("day", 2.0, local, day_shape=shape)
    assert local_day.rates == utc_day.rates and local_day.rates[0] == 2.0  # 00:00 UTC: the night, not 08:00's peak
    assert local_day.start == START and local_day.start.utcoffset() == timedelta(0)
    p = tmp_path / "t.csv"
    p.write_text("time,requests_per_s\n0,1\n60,2\n")
    assert trace.read(p, local).start.utcoffset() == timedelta(0)  # the table's times are UTC whatever --start's zone


def test_json_rows(tmp_path):
    t = read(tmp_path, '[{"time": 0, "requests_per_s": 1}, {"time": 30, "requests_per_s": 0}]', "t.json")
    assert t.step_s == 30 and t.rates == [1.0, 0.0]


@pytest.mark.parametrize("column", ["requests_per_s", "prompt_tokens"])
def test_a_json_true_is_not_a_number(tmp_path, column):
    """It was read as 1 (float(True)), silently."""
    rows = [{"time": 0, "requests_per_s": 1, "prompt_tokens": 5}, {"time": 30, "requests_per_s": 1, "prompt_tokens": 5}]
    rows[1][column] = True
    (tmp_path / "t.json").write_text(json.dumps(rows))
    with pytest.raises(UserError) as info:
        trace.read(tmp_path / "t.json", START)
    assert [str(p) for p in info.value.problems] == [f"{tmp_path / 't.json'}: row 2: {column}: true is not a number"]


@pytest.mark.parametrize(
    "rows, says",
    [
        # review F11: "1" was simulated as 1 req/s, as true is refused (docs/simulation.md)
        ([{"time": 0, "requests_per_s": "1"}, {"time": 30, "requests_per_s": 1}], 'row 1: requests_per_s: "1" is text'),
        (
            [{"time": 0, "requests_per_s": 1, "output_tokens": "9"}, {"time": 30, "requests_per_s": 1, "output_tokens": 9}],
            'row 1: output_tokens: "9" is text',
        ),
        ([{"time": 0, "requests_per_s": 1}, {"time": "30", "requests_per_s": 1}], 'row 2: time: "30" is text'),
        # review F9: a JSON trace has no header row to give
        ([], 'no rows: give a list of at least two rows, e.g. [{"time": 0, "requests_per_s": 2}, ...]'),
        ({"rows": []}, "no rows: give a list of at least two rows"),
    ],
)
def test_a_json_trace_holds_json_numbers_and_rows(tmp_path, rows, says):
    assert problems(tmp_path, json.dumps(rows), "t.json")[0].startswith(f"{tmp_path / 't.json'}: {says}")


def test_a_json_trace_may_give_times_as_iso_text(tmp_path):
    rows = [
        {"time": "2026-12-07T09:00:00+08:00", "requests_per_s": 1},
        {"time": "2026-12-07T09:00:10+08:00", "requests_per_s": 2},
    ]
    assert read(tmp_path, json.dumps(rows), "t.json").rates == [1.0, 2.0]


@pytest.mark.parametrize(
    "text, where, says",
    [
        ("time,rate\n0,1\n10,1\n", "header", "missing column requests_per_s"),
        ("time,rate\n", "header", "missing column requests_per_s"),  # a wrong header before the missing rows
        ("time,requests_per_s\n", "", "no rows: give a header row and at least two data rows"),
        ("", "header", "empty file"),
        ("time,requests_per_s,colour\n0,1,red\n10,1,red\n", "header", "unknown column colour"),
        ("time,requests_per_s\n0,1\n10,-2\n", "row 2: requests_per_s", ">= 0"),
        ("time,requests_per_s\n0,1\n10,lots\n", "row 2: requests_per_s", "not a number"),
        ("time,requests_per_s\n0,1\n20,1\n10,1\n", "row 3: time", "sort the rows"),
        ("time,requests_per_s\n0,1\n10,1\n40,1\n", "row 3: time", "fill the gap"),
        ("time,requests_per_s\n2026-12-07T09:00:00,1\n2026-12-07T09:00:10,1\n", "row 1: time", "no zone"),
        ("time,requests_per_s\nyesterday,1\n", "row 1: time", "neither ISO 8601"),
        # the simulated time is bounded (trace.MAX_SPAN_S), times are finite and their dates representable
        ("time,requests_per_s\n0,5\n31536000000,5\n", "row 2: time", "at most 578.7 days"),
        ("time,requests_per_s\n0,5\n1e15,5\n", "row 2: time", "'1e15' is out of range"),
        ("time,requests_per_s\n0,5\nnan,5\n", "row 2: time", "'nan' is not a finite number"),
        ("time,requests_per_s\n2026-01-01T00:00:00Z,5\n9999-12-31T00:00:00Z,5\n", "row 2: time", "out of range"),
        ("time,requests_per_s\n0001-01-01T00:00:00+08:00,5\n0001-01-01T01:00:00+08:00,5\n", "row 1: time", "out of range"),
        ("time,requests_per_s\n9994-01-01T00:00:00Z,5\n9994-10-01T00:00:00Z,5\n", "row 2: time", "start between"),
        # a column twice was read as its last copy; a row after the first with more values than the header was read
        ("time,requests_per_s,requests_per_s\n0,1,9\n10,1,9\n", "header", "column 'requests_per_s' appears twice"),
        ("time,requests_per_s\n0,1\n10,1,7\n20,1\n", "row 2", "more values than header columns"),
        ("time,requests_per_s\n0,1\n10\n", "row 2: requests_per_s", "missing: give a value in every row"),
        # a cell past the csv module's limit was a csv.Error traceback (cost reconcile --bill refused it already)
        (
            "time,requests_per_s\n0,1\n10," + "1" * 140_000 + "\n",
            "row 2",
            "not CSV this reads (field larger than field limit (131072); line 3 of the file)",
        ),
        (
            "time," + "r" * 140_000 + "\n0,1\n",
            "header",
            "not CSV this reads (field larger than field limit (131072); line 1 of the file)",
        ),
        # a rate or a token count beyond a billion was simulated: a peak of 1e300 req/s printed a 300-digit node count
        ("time,requests_per_s\n0,1\n10,1e300\n", "row 2: requests_per_s", "must be at most 1e+09 (check the unit)"),
        ("time,requests_per_s,output_tokens\n0,1,5e9\n10,1,5\n", "row 1: output_tokens", "must be at most 1e+09"),
    ],
)
def test_bad_traces_name_row_and_column(tmp_path, text, where, says):
    found = problems(tmp_path, text)
    assert any(where in p and says in p for p in found), found
    assert not any("row 1" in p for p in found if "row 1" not in where), found  # no row that the file does not hold
    assert all(p.startswith(str(tmp_path / "t.csv")) for p in found)


def test_the_longest_trace_is_the_rows_budget_at_the_profiles_step():
    assert trace.MAX_SPAN_S == trace.MAX_ROWS * trace.PROFILE_STEP_S and trace.MAX_RECLAIMS_PER_HOUR == 360
    assert trace.span_problems(START, trace.MAX_SPAN_S, "t.csv", "") == []
    assert trace.span_problems(trace.LATEST - (trace.LATEST - START), trace.MAX_SPAN_S + 1, "t.csv", "")


def test_profiles_have_the_documented_shape():
    step = trace.profile("step", 2.0, START)
    assert step.rates[0] == 2.0 and step.rates[int(3600 / 10)] == 10.0 and step.rates[-1] == 2.0
    assert step.duration_s == 5 * 3600
    spike = trace.profile("spike", 1.0, START)
    assert max(spike.rates) == 10.0 and sum(1 for r in spike.rates if r == 10.0) == 30
    with pytest.raises(UserError):
        trace.profile("weekly", 1.0, START)


@pytest.mark.parametrize(
    "text, says",
    [
        # JSON traces were read with the plain decoder: a key twice was read as its last copy
        ('[{"time": 0, "requests_per_s": 1, "requests_per_s": 9}, {"time": 10, "requests_per_s": 1}]', "duplicate key"),
        (
            '[{"time": 0, "requests_per_s": true}, {"time": 10, "requests_per_s": 1}]',
            "row 1: requests_per_s: true is not a number",
        ),
        ('[{"time": 0, "requests_per_s": 1}, {"time": 10}]', "row 2: requests_per_s: missing"),  # was "None is not a"
    ],
)
def test_bad_json_traces(tmp_path, text, says):
    found = problems(tmp_path, text, "t.json")
    assert any(says in p for p in found) and all(p.startswith(str(tmp_path / "t.json")) for p in found), found


def test_a_trace_that_cannot_be_read_is_named_as_every_input_file(tmp_path):
    """A folder read "cannot read: [Errno 21] Is a directory: '<path>'", and bytes not UTF-8 a codec's message."""
    folder = tmp_path / "t.csv"
    folder.mkdir()
    with pytest.raises(UserError) as e:
        trace.read(folder, START)
    assert [str(p) for p in e.value.problems] == [f"{folder}: is a folder, not a file"]
    bad = tmp_path / "b.csv"
    bad.write_bytes(b"time,requests_per_s\n0,\xff\n")
    with pytest.raises(UserError) as e:
        trace.read(bad, START)
    assert [str(p) for p in e.value.problems] == [f"{bad}:2:3: not UTF-8 text: byte 0xff; save the file as UTF-8"]
