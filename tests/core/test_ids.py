"""core.ids: which text names a database id."""

from __future__ import annotations

import pytest

from core.ids import MAX_ID, id_from_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12", 12),
        ("0", 0),
        ("007", 7),
        ("9" * 18, int("9" * 18)),  # the longest accepted: always within MAX_ID
        ("1" + "0" * 18, None),  # 19 digits: could overflow the key, so never read
        ("", None),
        (" 12", None),
        ("12 ", None),
        ("-1", None),
        ("+1", None),
        ("1e3", None),
        ("1_000", None),
        ("١٢", None),  # Arabic-Indic digits: int() reads them, an id never has them
        ("²", None),  # a superscript passes str.isdigit()
        ("#12", None),
    ],
)
def test_id_from_text(text, expected):
    assert id_from_text(text) == expected


def test_every_accepted_id_fits_the_key():
    assert id_from_text("9" * 18) < MAX_ID == 2**63 - 1
