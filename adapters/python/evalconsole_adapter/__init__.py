"""Serve any Python agent as an evalconsole ``evalconsole/1`` endpoint (standard library only).

    from evalconsole_adapter import ToolRecorder, wrap, wsgi_app

    recorder = ToolRecorder()

    @recorder.tool
    def lookup_order(orderId: str) -> dict: ...

    def agent(messages, scenario) -> str:
        ...                                   # call lookup_order(...) as your agent decides
        return "Order EC-1042 has shipped."

    app = wsgi_app(wrap(agent, recorder=recorder), secret="s3cret")   # or asgi_app(...)
"""

from .apps import DEFAULT_MAX_BODY_BYTES, asgi_app, wsgi_app
from .handler import Context, Handler, build_reply, wrap
from .openai_messages import default_error_of, from_openai_messages, split_openai_reply
from .protocol import PROTOCOL, ProtocolError, parse_request, scenario_messages, to_jsonable
from .recorder import ToolRecorder
from .server import AdapterServer, make_server, serve

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "PROTOCOL",
    "AdapterServer",
    "Context",
    "Handler",
    "ProtocolError",
    "ToolRecorder",
    "asgi_app",
    "build_reply",
    "default_error_of",
    "from_openai_messages",
    "make_server",
    "parse_request",
    "scenario_messages",
    "serve",
    "split_openai_reply",
    "to_jsonable",
    "wrap",
    "wsgi_app",
]

__version__ = "0.1.0"
