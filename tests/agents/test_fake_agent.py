"""The fake agent used by tests and benchmarks: per-request behaviour, counters, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.fake_agent import FakeAgent

ROOT = Path(__file__).resolve().parents[2]


def post(
    agent: FakeAgent, *, sample: str = "s", text: str = "hi", fake: dict | None = None, **kw
) -> httpx.Response:
    body = {
        "protocol": "evalconsole/1",
        "run": "r",
        "sample": sample,
        "attempt": 1,
        "scenario": {
            "name": "n",
            "input": text,
            "messages": [{"role": "user", "content": text}],
            "metadata": {"fake": fake or {}},
        },
    }
    kw.setdefault("timeout", 5)
    return httpx.post(agent.url, json=body, **kw)


def test_default_reply_and_order_tool_call(fake_agent):
    r = post(fake_agent, text="Where is my order EC-1042?")
    assert r.status_code == 200
    assert r.json()["toolCalls"][0]["input"] == {"orderId": "EC-1042"}
    assert post(fake_agent, text="hello").json() == {"output": "You said: hello", "toolCalls": []}


def test_fail_times_counts_per_sample(fake_agent):
    codes = [post(fake_agent, sample="a", fake={"fail_times": 2}).status_code for _ in range(3)]
    assert codes == [500, 500, 200]
    assert post(fake_agent, sample="b", fake={"fail_times": 1, "fail_status": 503}).status_code == 503
    stats = fake_agent.stats()
    assert stats["sample_attempts"] == {"a": 3, "b": 1}
    assert stats["statuses"] == {"200": 1, "500": 2, "503": 1}


def test_429_with_retry_after(fake_agent):
    r = post(fake_agent, sample="z", fake={"status_429_times": 1, "retry_after": 7})
    assert r.status_code == 429 and r.headers["retry-after"] == "7"
    assert post(fake_agent, sample="z", fake={"status_429_times": 1}).status_code == 200


def test_header_settings_and_constructor_defaults_merge():
    with FakeAgent(output="from defaults", trace=[]) as agent:
        r = post(agent, headers={"X-Fake": json.dumps({"output": "from header"})})
        assert r.json()["output"] == "from header" and r.json()["trace"] == []
        r = post(
            agent, fake={"output": "from metadata"}, headers={"X-Fake": json.dumps({"output": "from header"})}
        )
        assert r.json()["output"] == "from metadata"
        assert post(agent).json()["output"] == "from defaults"


def test_delay_and_in_flight_peak():
    with FakeAgent(latency_ms=100) as agent:
        started = time.monotonic()
        post(agent)
        assert time.monotonic() - started >= 0.1
        assert post(agent, fake={"delay_ms": 0}).status_code == 200
        assert agent.stats()["max_in_flight"] == 1


def test_stats_endpoint_and_reset(fake_agent):
    post(fake_agent)
    stats = httpx.get(fake_agent.base_url + "/stats").json()
    assert stats["requests"] == 1 and stats["in_flight"] == 0
    httpx.post(fake_agent.base_url + "/stats/reset")
    assert fake_agent.stats()["requests"] == 0


def test_openai_chat_endpoint(fake_agent):
    r = httpx.post(
        fake_agent.openai_url + "/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "echo me"}]},
    )
    message = r.json()["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "echo me"}


def test_cli_serves_and_stops_cleanly(tmp_path):
    pid_file = tmp_path / "pid"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests/support/fake_agent.py"),
            "--port",
            "0",
            "--latency-ms",
            "10",
            "--pid-file",
            str(pid_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("LISTENING 127.0.0.1:")
        port = int(line.split()[1].split(":")[1])
        r = httpx.post(f"http://127.0.0.1:{port}/", json={"scenario": {"input": "x"}, "sample": "1"})
        assert r.json()["output"] == "You said: x"
        assert int(pid_file.read_text()) == proc.pid
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=5)
    assert proc.returncode == 0 and '"requests": 1' in out


def test_cli_refuses_non_loopback():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests/support/fake_agent.py"), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert proc.returncode != 0


@pytest.mark.parametrize("fake", [{"hang": True}, {"drop": True}])
def test_hung_and_dropped_requests_do_not_leak(fake):
    with FakeAgent() as agent:
        with pytest.raises(httpx.HTTPError):
            post(agent, fake=fake, timeout=0.3) if "hang" in fake else post(agent, fake=fake)
        deadline = time.monotonic() + 3
        while agent.stats()["open_connections"] and time.monotonic() < deadline:
            time.sleep(0.02)
        stats = agent.stats()
        assert stats["open_connections"] == 0 and stats["in_flight"] == 0
