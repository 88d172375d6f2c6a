"""Database ids read from text (a query string, a form field, a search box).

Every table's key is a 64-bit integer (BigAutoField). Text names an id only when it is ASCII digits and
short enough to fit: ``int()`` alone would accept "١٢" (Arabic-Indic digits) or " 12", and a longer
number overflows the database's integer instead of matching no row.
"""

from __future__ import annotations

MAX_ID = 2**63 - 1  # BigAutoField: a larger id matches no row (and overflows the database's integer)


def id_from_text(text: str) -> int | None:
    """The id ``text`` names (ASCII digits, at most 18 of them, so always within MAX_ID), else None."""
    if text.isascii() and text.isdigit() and len(text) < 19:
        return int(text)
    return None
