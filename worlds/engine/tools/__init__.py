"""The simulated tools. Each module declares its record schemas (and later its HTTP handlers) and
registers one :class:`~worlds.engine.schema.Tool`; adding a tool is a new module plus one line below.
No Django imports anywhere in this package.
"""

# ruff: noqa: I001 - the tool imports stay in registration order
from __future__ import annotations

from ..schema import Tool, UnknownTool, all_tools, get_tool, register

# One import per tool module.
from . import slack  # noqa: E402,F401
from . import github  # noqa: E402,F401
from . import datadog  # noqa: E402,F401
from . import pagerduty  # noqa: E402,F401
from . import okta  # noqa: E402,F401

__all__ = ["Tool", "UnknownTool", "all_tools", "get_tool", "register"]
