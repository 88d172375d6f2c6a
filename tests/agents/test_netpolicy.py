"""The outbound URL policy: decided on the resolved address, at connect time, for every client we build."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import time

import httpcore
import httpx
import pytest

from agents import netpolicy
from agents.protocols import AgentCallError, AgentTarget, call_agent, make_async_client, make_sync_client
from tests.agents.helpers import scenario
from tests.support.fake_agent import FakeAgent


def target(url: str, **kw) -> AgentTarget:
    return AgentTarget(protocol="evalconsole", endpoint_url=url, **kw)


class Resolver:
    """A stand-in for DNS: name -> addresses, counting lookups."""

    def __init__(self, names: dict[str, list[str]]) -> None:
        self.names = names
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.names:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        return self.names[host]


def run_async(coro_fn, *args, **kw):
    return asyncio.run(coro_fn(*args, **kw))


async def async_call(url: str, *, resolver=None, allow_private=True, client_allows=None, **target_kw):
    allows = allow_private if client_allows is None else client_allows
    async with make_async_client(allow_private=allows, resolver=resolver) as client:
        return await call_agent(
            target(url, allow_private=allow_private, **target_kw),
            scenario=scenario(),
            run_id="r",
            sample_id="s",
            client=client,
        )


def sync_call(url: str, *, resolver=None, allow_private=True, client_allows=None, **target_kw):
    from agents.protocols import call_agent_sync

    allows = allow_private if client_allows is None else client_allows
    with make_sync_client(allow_private=allows, resolver=resolver) as client:
        return call_agent_sync(
            target(url, allow_private=allow_private, **target_kw),
            scenario=scenario(),
            run_id="r",
            sample_id="s",
            client=client,
        )


@pytest.fixture(params=["async", "sync"])
def policy_call(request):
    if request.param == "async":
        return lambda url, **kw: run_async(async_call, url, **kw)
    return sync_call


# ----------------------------------------------------------------------------- address table


@pytest.mark.parametrize(
    ("address", "default", "strict"),
    [
        ("8.8.8.8", None, None),
        ("2606:4700:4700::1111", None, None),
        ("127.0.0.1", None, "loopback"),
        ("127.8.9.10", None, "loopback"),
        ("::1", None, "loopback"),
        ("0.0.0.0", None, "unspecified"),
        ("10.0.0.5", None, "private"),
        ("172.16.3.4", None, "private"),
        ("192.168.1.1", None, "private"),
        ("100.64.0.1", None, "shared (CGNAT)"),
        ("fc00::1", None, "private"),
        ("fd12:3456::1", None, "private"),
        ("::ffff:10.0.0.1", None, "private"),
        ("169.254.169.254", "link-local", "link-local"),
        ("169.254.0.1", "link-local", "link-local"),
        ("fe80::1", "link-local", "link-local"),
        ("fd00:ec2::254", "cloud metadata", "cloud metadata"),
        ("100.100.100.200", "cloud metadata", "cloud metadata"),
        ("::ffff:169.254.169.254", "link-local", "link-local"),
        ("64:ff9b::a9fe:a9fe", "link-local", "link-local"),
        ("224.0.0.1", "multicast", "multicast"),
        ("255.255.255.255", "broadcast", "broadcast"),
    ],
)
def test_check_address(address, default, strict):
    for allow_private, expected in ((True, default), (False, strict)):
        why = netpolicy.check_address(address, allow_private=allow_private)
        if expected is None:
            assert why is None
        else:
            assert why is not None and why.startswith(f"refused: {address}") and f"{expected} address" in why


def test_metadata_reason_reads_well():
    assert (
        netpolicy.check_address("169.254.169.254")
        == "refused: 169.254.169.254 is a link-local address (cloud metadata)"
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://agent.example.com/v1", None),
        ("http://127.0.0.1:8001/", None),
        ("http://[::1]:8001/", None),
        ("", "Enter a URL."),
        ("agent.example.com/v1", "must start with http"),
        ("ftp://agent.example.com/", "must start with http"),
        ("http:///path", "must include a host"),
        ("http://user:pw@agent.example.com/", "credentials"),
        ("http://agent.example.com:99999/", "port must be between 1 and 65535, not 99999"),
        ("http://agent example.com/", "spaces"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
    ],
)
def test_check_url_syntax(url, problem):
    message = netpolicy.check_url_syntax(url)
    if problem is None:
        assert message is None
    else:
        assert message is not None and problem in message


# ----------------------------------------------------------------------------- connect-time refusal


def test_metadata_ip_is_refused_without_a_connection_or_retry(policy_call):
    started = time.monotonic()
    with pytest.raises(AgentCallError) as info:
        policy_call("http://169.254.169.254/latest/meta-data/", retries=3)
    exc = info.value
    assert exc.message == "refused: 169.254.169.254 is a link-local address (cloud metadata)"
    assert exc.kind == "refused" and len(exc.attempts) == 1 and exc.attempts[0].status_code is None
    assert time.monotonic() - started < 1.0


def test_hostname_resolving_to_link_local_is_refused(policy_call):
    resolver = Resolver({"metadata.evil.test": ["169.254.169.254"]})
    with pytest.raises(AgentCallError) as info:
        policy_call("http://metadata.evil.test/", resolver=resolver)
    assert info.value.message == (
        "refused: metadata.evil.test resolves to 169.254.169.254, "
        "which is a link-local address (cloud metadata)"
    )
    assert resolver.lookups == ["metadata.evil.test"]


def test_any_bad_candidate_refuses_the_name(policy_call, fake_agent):
    resolver = Resolver({"mixed.test": ["127.0.0.1", "fd00:ec2::254"]})
    with pytest.raises(AgentCallError) as info:
        policy_call(f"http://mixed.test:{fake_agent.port}/", resolver=resolver)
    assert "fd00:ec2::254" in info.value.message and "cloud metadata" in info.value.message
    assert fake_agent.stats()["requests"] == 0


def test_loopback_allowed_by_default_and_refused_when_private_is_off(policy_call, fake_agent):
    assert policy_call(fake_agent.url).output
    with pytest.raises(AgentCallError) as info:
        policy_call(fake_agent.url, allow_private=False)
    assert info.value.message == (
        "refused: 127.0.0.1 is a loopback address and this agent may not call private addresses"
    )


def test_strict_target_on_a_permissive_shared_client_is_still_refused(policy_call, fake_agent):
    with pytest.raises(AgentCallError) as info:
        policy_call(fake_agent.url, allow_private=False, client_allows=True)
    assert info.value.kind == "refused"
    assert fake_agent.stats()["requests"] == 0


def test_name_resolving_to_loopback_refused_when_private_is_off(policy_call, fake_agent):
    resolver = Resolver({"localhost.evil.test": ["127.0.0.1"]})
    with pytest.raises(AgentCallError) as info:
        policy_call(f"http://localhost.evil.test:{fake_agent.port}/", resolver=resolver, allow_private=False)
    assert info.value.message.startswith(
        "refused: localhost.evil.test resolves to 127.0.0.1, which is a loopback"
    )


def test_connects_to_the_vetted_address_and_keeps_the_host_header(policy_call, fake_agent):
    resolver = Resolver({"agent.test": ["127.0.0.1"]})
    reply = policy_call(f"http://agent.test:{fake_agent.port}/agent", resolver=resolver)
    assert reply.output
    assert fake_agent.requests[-1]["headers"]["host"] == f"agent.test:{fake_agent.port}"
    assert resolver.lookups == ["agent.test"]


def test_unknown_name_is_a_connect_error(policy_call):
    with pytest.raises(AgentCallError) as info:
        policy_call("http://nowhere.test/", resolver=Resolver({}), retries=0)
    assert info.value.kind == "connect" and "could not resolve nowhere.test" in info.value.message


def test_the_checked_address_is_the_one_connected_to(fake_agent):
    """No second lookup by anyone: the inner backend is handed the IP we vetted, never the name."""
    seen: list[str] = []

    class Recording(httpcore.AsyncNetworkBackend):
        def __init__(self):
            self.inner = httpcore.AnyIOBackend()

        async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            seen.append(host)
            return await self.inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )

        async def sleep(self, seconds):
            await self.inner.sleep(seconds)

    flips = iter([["127.0.0.1"], ["169.254.169.254"]])  # a rebinding DNS server: safe, then evil
    backend = netpolicy.AsyncPolicyBackend(resolver=lambda host, port: next(flips), inner=Recording())

    async def go():
        stream = await backend.connect_tcp("rebind.test", fake_agent.port, timeout=2)
        await stream.aclose()
        with pytest.raises(netpolicy.AddressRefused):
            await backend.connect_tcp("rebind.test", fake_agent.port, timeout=2)

    asyncio.run(go())
    assert seen == ["127.0.0.1"]


def test_async_resolver_is_awaited(fake_agent):
    async def resolve(host, port):
        await asyncio.sleep(0)
        return ["127.0.0.1"]

    reply = run_async(async_call, f"http://async-dns.test:{fake_agent.port}/agent", resolver=resolve)
    assert reply.output


def test_environment_proxies_are_ignored(monkeypatch, fake_agent):
    # A proxy would connect on our behalf, past the check; our clients never use one.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://169.254.169.254:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert run_async(async_call, fake_agent.url).output
    assert sync_call(fake_agent.url).output


def test_plain_httpx_client_is_rejected(fake_agent):
    async def go():
        async with httpx.AsyncClient() as plain:
            await call_agent(
                target(fake_agent.url), scenario=scenario(), run_id="r", sample_id="s", client=plain
            )

    with pytest.raises(TypeError, match="make_async_client"):
        asyncio.run(go())


def test_policy_clients_refuse_for_generic_httpx_use_too():
    """Other code (e.g. an OpenAI SDK judge with a custom base URL) can reuse these clients."""
    with make_sync_client() as client, pytest.raises(httpx.ConnectError) as info:
        client.get("http://169.254.169.254/latest/meta-data/")
    assert isinstance(info.value.__cause__, netpolicy.AddressRefused)


# ----------------------------------------------------------------------------- TLS through the vetted IP


@pytest.fixture(scope="module")
def tls_material(tmp_path_factory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agent.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("agent.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    d = tmp_path_factory.mktemp("tls")
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return d / "cert.pem", d / "key.pem"


def test_https_uses_the_hostname_for_sni_and_certificate_checks(tls_material):
    cert, key = tls_material
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    sni_seen: list[str | None] = []
    server_ctx.sni_callback = lambda sock, name, ctx: sni_seen.append(name)
    client_ctx = ssl.create_default_context(cafile=str(cert))
    resolver = Resolver({"agent.test": ["127.0.0.1"]})

    with FakeAgent(ssl_context=server_ctx) as agent:

        async def go(url):
            async with make_async_client(resolver=resolver, verify=client_ctx) as client:
                return await call_agent(
                    target(url, retries=2), scenario=scenario(), run_id="r", sample_id="s", client=client
                )

        reply = asyncio.run(go(f"https://agent.test:{agent.port}/agent"))
        assert reply.output and sni_seen == ["agent.test"]
        assert agent.requests[-1]["headers"]["host"] == f"agent.test:{agent.port}"
        # Same server by IP: the certificate names agent.test, so verification must fail.
        with pytest.raises(AgentCallError) as info:
            asyncio.run(go(f"https://127.0.0.1:{agent.port}/agent"))
        assert info.value.kind == "tls" and "IP address mismatch" in info.value.message, info.value.message


def test_ip_objects_are_accepted():
    assert netpolicy.check_address(ipaddress.ip_address("10.0.0.1"), allow_private=False) is not None


def test_falls_through_to_the_next_vetted_address(policy_call, fake_agent):
    # 127.0.0.2 answers nothing on this port (refused), 127.0.0.1 is the agent.
    resolver = Resolver({"two.test": ["127.0.0.2", "127.0.0.1"]})
    reply = policy_call(f"http://two.test:{fake_agent.port}/agent", resolver=resolver, retries=0)
    assert reply.output and resolver.lookups == ["two.test"]
