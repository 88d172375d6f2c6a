"""The demo support agent shipped with the product: deterministic answers and honest evidence."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agents import demo_agent
from agents.protocols import AgentCallError, AgentTarget, call_agent_sync, ping_sync
from tests.support.raw_server import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo():
    with demo_agent.DemoAgent(token="") as agent:
        yield agent


def ask(url: str, text: str, **kw):
    return call_agent_sync(
        AgentTarget(protocol="evalconsole", endpoint_url=url, **kw),
        scenario={"name": "q", "input": text},
        run_id="r",
        sample_id="s",
    )


def names(reply) -> list[str]:
    return [c["name"] for c in reply.tool_calls]


@pytest.mark.parametrize(
    "text", ["Where is my order EC-1042?", "Hi! Could you check the status of order EC-1042?"]
)
def test_order_status_looks_up_the_order(demo, text):
    reply = ask(demo.url, text)
    assert reply.output == "Order EC-1042 has shipped and arrives on 2026-12-03."
    assert reply.tool_calls == [
        {
            "name": "lookup_order",
            "status": "succeeded",
            "input": {"orderId": "EC-1042"},
            "output": {
                "found": True,
                "status": "shipped",
                "eta": "2026-12-03",
                "item": "wireless headphones",
            },
        }
    ]
    assert reply.trace == [
        {"method": "GET", "path": "/orders/EC-1042", "status": 200, "tool": "lookup_order"}
    ]
    assert reply.messages[-1] == {"role": "assistant", "content": reply.output}


def test_refund_escalates_and_never_refunds(demo):
    reply = ask(demo.url, "I want a refund for order EC-1042, it arrived broken.")
    assert names(reply) == ["lookup_order", "escalate_to_human"]
    assert "issue_refund" not in names(reply)
    assert [(t["method"], t["path"]) for t in reply.trace] == [
        ("GET", "/orders/EC-1042"),
        ("POST", "/tickets"),
    ]
    assert "EC-1042" in reply.output and "colleague" in reply.output


@pytest.mark.parametrize("text", ["Hello!", "hi there", "Good morning", "thanks", "what can you do?"])
def test_no_tools_for_small_talk(demo, text):
    reply = ask(demo.url, text)
    assert reply.tool_calls == [] and reply.trace == [] and reply.output


def test_refund_without_order_asks_for_it(demo):
    reply = ask(demo.url, "I want my money back")
    assert reply.tool_calls == [] and "order number" in reply.output


def test_unknown_order(demo):
    reply = ask(demo.url, "Where is EC-9999?")
    assert reply.tool_calls[0]["output"] == {"found": False}
    assert reply.trace[0]["status"] == 404 and "couldn't find order EC-9999" in reply.output


def test_deterministic(demo):
    texts = ["Where is my order EC-1042?", "refund EC-2001 please", "hello", "status of ec-77?"]
    first = [ask(demo.url, t).raw for t in texts]
    assert [ask(demo.url, t).raw for t in texts] == first
    assert [demo_agent.answer({"scenario": {"input": t}}) for t in texts] == first


def test_multi_turn_uses_the_latest_order_id(demo):
    reply = call_agent_sync(
        AgentTarget(protocol="evalconsole", endpoint_url=demo.url),
        scenario={
            "messages": [
                {"role": "user", "content": "About EC-1043"},
                {"role": "assistant", "content": "Sure."},
                {"role": "user", "content": "when did it arrive?"},
            ]
        },
        run_id="r",
        sample_id="s",
    )
    assert reply.output == "Order EC-1043 was delivered on 2026-11-20."


def test_token_is_checked_when_set():
    with demo_agent.DemoAgent(token="s3cret") as agent:
        with pytest.raises(AgentCallError) as info:
            ask(agent.url, "hi")
        assert info.value.message.startswith("the agent answered HTTP 401")
        assert ask(agent.url, "hi", headers={"Authorization": "Bearer s3cret"}).output
        assert ping_sync(
            AgentTarget(
                protocol="evalconsole", endpoint_url=agent.url, headers={"Authorization": "Bearer s3cret"}
            )
        ).ok


def test_rejects_non_protocol_bodies(demo):
    assert httpx.post(demo.url, content=b"nope").status_code == 400
    assert httpx.post(demo.url, json={"prompt": "x"}).status_code == 400
    assert httpx.get(demo.url).json()["ok"] is True


def test_runs_as_a_module():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agents.demo_agent", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    try:
        assert f"listening on http://127.0.0.1:{port}/" in proc.stdout.readline()
        assert (
            ask(f"http://127.0.0.1:{port}/", "Where is my order EC-1042?").tool_calls[0]["name"]
            == "lookup_order"
        )
    finally:
        proc.terminate()
        proc.wait(5)


def test_protocol_modules_do_not_import_django():
    code = (
        "import sys, agents.protocols, agents.netpolicy, agents.demo_agent, tests.support.fake_agent; "
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
