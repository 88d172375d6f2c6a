from datetime import timedelta

import pytest

from worlds.engine.durations import DurationError, format_duration, parse_duration, to_ms


@pytest.mark.parametrize(
    "text, expected",
    [
        ("500ms", timedelta(milliseconds=500)),
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("1h", timedelta(hours=1)),
        ("1m30s", timedelta(seconds=90)),
        ("1h2m3s4ms", timedelta(hours=1, minutes=2, seconds=3, milliseconds=4)),
        ("0s", timedelta(0)),
    ],
)
def test_parses_durations(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("-10m", timedelta(minutes=-10)),
        ("+5m", timedelta(minutes=5)),
        ("-1h30m", -timedelta(minutes=90)),
        ("2s", timedelta(seconds=2)),
    ],
)
def test_signed_durations_for_seed_times(text, expected):
    assert parse_duration(text, signed=True) == expected


@pytest.mark.parametrize(
    "bad",
    ["", "5", "5 m", "5min", "1.5s", "30s1m", "1m1m", "ms", "-", "5M", "1d", "1s500", "s30", " 5m", "-10m"],
)
def test_rejects_anything_else(bad):
    with pytest.raises(DurationError):
        parse_duration(bad)


@pytest.mark.parametrize("bad", [30, 1.5, None, True, ["5m"], {"m": 5}])
def test_rejects_non_strings(bad):
    with pytest.raises(DurationError, match="must be a duration"):
        parse_duration(bad)


def test_milliseconds_and_canonical_text():
    assert to_ms(parse_duration("1m30s")) == 90_000
    assert to_ms(parse_duration("-10m", signed=True)) == -600_000
    assert [
        format_duration(parse_duration(t, signed=True)) for t in ("1m30s", "500ms", "-10m", "0s", "90s")
    ] == ["1m30s", "500ms", "-10m", "0s", "1m30s"]
