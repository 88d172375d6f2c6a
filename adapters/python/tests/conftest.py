"""Make ``evalconsole_adapter`` importable from a checkout (adapters/python on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

ADAPTER_ROOT = Path(__file__).resolve().parents[1]
if str(ADAPTER_ROOT) not in sys.path:
    sys.path.insert(0, str(ADAPTER_ROOT))
