"""core.templatetags.names: `trunc` and `local_time` (rows drawn in Python call them 50-150 times a page)
write exactly what `format_html` and the `date` filter after `template_localtime` write."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from django.template.defaultfilters import date as date_filter
from django.utils import timezone as dj_timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from core.templatetags.names import esc, local_time, trunc, truncate


def reference_trunc(value):
    text = "" if value is None else str(value)
    if not text:
        return ""
    return format_html('<span class="trunc" title="{}">{}</span>', text, text)


@pytest.mark.parametrize(
    "value",
    ["Check 01", '<b>"Tom & Jerry"</b>', "it's", "", None, 0, 42, "é ◆ 𝄞", mark_safe("<i>safe</i>"), " "],
)
def test_trunc_is_format_html(value):
    got = trunc(value)
    assert got == reference_trunc(value)
    assert isinstance(got, SafeString) or got == ""


ZONES = ["UTC", "Europe/Paris", "America/St_Johns", "Asia/Kathmandu", "Pacific/Kiritimati"]
MOMENTS = [
    datetime(2026, 12, 2, 15, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 3, 29, 0, 30, tzinfo=UTC),  # a DST change in Paris
    datetime(1, 1, 1, 12, 0, tzinfo=UTC),
    datetime(999, 5, 6, 7, 8, tzinfo=UTC),  # a year below 1000: %04d
    datetime(2026, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))),
]


@pytest.mark.parametrize("fmt", ["Y-m-d H:i:s", "Y-m-d H:i", "Y-m-d"])
@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("moment", MOMENTS)
def test_local_time_is_the_date_filter(zone, moment, fmt):
    with dj_timezone.override(zoneinfo.ZoneInfo(zone)):
        try:
            expected = date_filter(dj_timezone.template_localtime(moment), fmt)
        except OverflowError:  # year 1 minus an offset: both sides refuse it the same way
            with pytest.raises(OverflowError):
                local_time(moment, fmt)
            return
        assert local_time(moment, fmt) == expected


@pytest.mark.parametrize(
    "value", [None, "", datetime(2026, 12, 2, 15, 4), date(2026, 12, 2), "not a date", 17]
)
@pytest.mark.parametrize("fmt", ["Y-m-d H:i", "Y-m-d", "N j, Y"])
def test_local_time_anything_else_goes_through_the_filter(value, fmt):
    def outcome(function):
        try:
            return function()
        except TypeError as error:  # a date with a time format: the filter's own refusal, both sides
            return type(error)

    with dj_timezone.override(zoneinfo.ZoneInfo("Europe/Paris")):
        reference = outcome(lambda: date_filter(dj_timezone.template_localtime(value), fmt))
        assert outcome(lambda: local_time(value, fmt)) == reference


def test_local_time_other_formats_of_aware_datetimes():
    moment = datetime(2026, 12, 2, 15, 4, 5, tzinfo=UTC)
    with dj_timezone.override(zoneinfo.ZoneInfo("Asia/Kathmandu")):
        for fmt in ["Y-m-d", "H:i:s", "c"]:
            assert local_time(moment, fmt) == date_filter(dj_timezone.template_localtime(moment), fmt)


TEXTS = [
    "",
    "plain",
    "x" * 30,
    "x" * 31,
    "<b>\"a\" & 'b'</b>",
    "é" * 10,
    "e\u0301" * 40,
    "e\u0301" * 5,
    "Run #3 · Case 1 · sample 2",
    "\u212b",
    "𝄞" * 31,
    17,
    None,
    "a\nb",
]


@pytest.mark.parametrize("value", [*TEXTS, mark_safe("<i>safe</i>")])
def test_esc_is_escape(value):
    from django.utils.html import escape

    assert esc(value) == escape(value)


@pytest.mark.parametrize("length", [0, 1, 2, 30, 31, 100])
@pytest.mark.parametrize("value", TEXTS)
def test_truncate_is_truncatechars(value, length):
    from django.template.defaultfilters import truncatechars

    assert truncate(value, length) == truncatechars(value, length)
