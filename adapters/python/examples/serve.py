"""A small deterministic Python order-desk agent served as an evalconsole/1 endpoint (WSGI).

Same behaviour as adapters/ai-sdk/examples/serve.mjs: when the latest user message holds an order
id like EC-1042 the agent calls its ``lookup_order`` tool and answers with the order's status;
otherwise it answers without tools (``toolCalls: []``). Known orders: EC-1042 (shipped), EC-1043
(processing), EC-2001 (delivered); any other id makes the tool raise ("order EC-9999 not found"),
reported as a failed tool call.

    python adapters/python/examples/serve.py [--port 8788] [--host 127.0.0.1] [--secret S]
    PORT=0 python adapters/python/examples/serve.py      # any free port; the chosen one is printed

Prints exactly one line "listening on http://HOST:PORT" on stdout once it accepts requests and
exits with status 0 on SIGTERM or SIGINT. The secret may also come from EVALCONSOLE_SECRET; when
set, requests need "Authorization: Bearer <secret>". Standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

try:
    import evalconsole_adapter  # noqa: F401 - installed, or on sys.path
except ImportError:  # running from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalconsole_adapter import ToolRecorder, serve, wrap

ORDERS = {"EC-1042": "shipped", "EC-1043": "processing", "EC-2001": "delivered"}
ORDER_ID = re.compile(r"\bEC-\d+\b", re.IGNORECASE)

recorder = ToolRecorder()


@recorder.tool
def lookup_order(orderId: str) -> dict:  # noqa: N803 - the tool's input field is "orderId"
    """Look up an order by its id (like EC-1042) and return its status."""
    status = ORDERS.get(orderId)
    if status is None:
        raise LookupError(f"order {orderId} not found")
    return {"found": True, "orderId": orderId, "status": status}


def order_desk(messages: list[dict], scenario: dict) -> str:
    """The agent: one tool decision per turn, on the latest user message."""
    last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    match = ORDER_ID.search(last_user)
    if match is None:
        return "I can look up orders for you. Please send an order id like EC-1042."
    try:
        order = lookup_order(orderId=match.group(0).upper())
    except LookupError as exc:
        return f"Sorry, I could not look up that order: {exc}."
    return f"Order {order['orderId']} is {order['status']}."


handler = wrap(order_desk, recorder=recorder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8788")))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--secret", default=os.environ.get("EVALCONSOLE_SECRET") or None)
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    serve(handler, args.host, args.port, secret=args.secret, verbose=args.verbose)


if __name__ == "__main__":
    main()
