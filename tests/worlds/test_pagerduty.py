"""The simulated PagerDuty REST API v2, driven by the official clients (``pagerduty.RestApiV2Client``
and the older ``pdpyras.APISession``, both unmodified) against a world served on loopback, plus the
``pagerduty.incident`` state check, the fault effect, the world's events and trace.

``pagerduty.RestApiV2Client`` refuses a base URL that is not ``https://`` (its ``url`` setter raises
``UrlError``). It is given ``https://pagerduty.test/worlds/<id>/pagerduty`` and an httpx2 transport
that forwards each request unchanged to the loopback server over plain HTTP, with
``X-Forwarded-Proto: https`` as a TLS-terminating proxy would add, so the ``self`` URLs the world
answers match the client's base URL. ``pdpyras`` takes the loopback URL as it is.
"""

from __future__ import annotations

import json
import warnings
from datetime import timedelta
from pathlib import Path

import httpx
import httpx2
import pagerduty
import pytest

from worlds.engine import load_scene
from worlds.engine.evaluate import evaluate
from worlds.engine.http import Request
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

with warnings.catch_warnings():  # pdpyras warns at import that it is deprecated in favour of pagerduty
    warnings.simplefilter("ignore")
    import pdpyras

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "pagerduty.yaml").read_text()


@pytest.fixture(scope="module")
def scene():
    return load_scene(SCENE, "pd.yaml")


class _Loopback(httpx2.BaseTransport):
    """Send the client's ``https://pagerduty.test`` requests to the loopback server over HTTP."""

    def __init__(self, root: str) -> None:
        self.root = httpx2.URL(root)
        self.inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["X-Forwarded-Proto"] = "https"
        request.url = request.url.copy_with(scheme="http", host=self.root.host, port=self.root.port)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


BOT = "bot@acme.example"


def to(status: str, **extra) -> dict:
    """An update body for ``rput``: ``{"type": "incident_reference", "status": ...}``."""
    return {"type": "incident_reference", "status": status, **extra}


def official(server: WorldServer, world: World, *, token: str | None = None, sender: str | None = BOT):
    client = pagerduty.RestApiV2Client(
        token or world.credentials["pagerduty"]["token"],
        default_from=sender,
        base_url=f"https://pagerduty.test/worlds/{world.id}/pagerduty",
        transport=_Loopback(server.root),
    )
    client.max_http_attempts = 1
    return client


def legacy(server: WorldServer, world: World, *, sender: str | None = BOT) -> pdpyras.APISession:
    session = pdpyras.APISession(world.credentials["pagerduty"]["token"], default_from=sender)
    session.url = f"{server.root}/worlds/{world.id}/pagerduty"
    return session


def raw(world: World, method: str, path: str, body=None, *, query: str = "", headers=None):
    """One call in the wire format, straight into the world (no HTTP): for the determinism tests."""
    sent = {
        "Authorization": f"Token token={world.credentials['pagerduty']['token']}",
        "Content-Type": "application/json",
        "From": "bot@acme.example",
        "Host": "pd.test",
    }
    sent.update(headers or {})
    data = json.dumps(body).encode() if body is not None else b""
    return world.call("pagerduty", Request.make(method, path, query, sent, data))


def _error(call) -> tuple[int, dict]:
    with pytest.raises(pagerduty.Error) as caught:
        call()
    response = caught.value.response
    return response.status_code, response.json()


def _check(world: World, **spec):
    return world.state_check("pagerduty.incident", spec)


def _post(world: World, title: str):
    """The agent opens an incident on the orders service (wire format, no HTTP)."""
    service = {"id": world.ids["pagerduty_orders"], "type": "service_reference"}
    incident = {"type": "incident", "title": title, "service": service}
    return raw(world, "POST", "/incidents", {"incident": incident})


def _opened(world: World) -> str:
    """A fault opens an orders incident now; the agent's first call finds it. Its id."""
    fault = {"service": "pagerduty_orders", "title": "orders 5xx"}
    world.simulator("pagerduty").apply_effect("incident", fault)
    query = "statuses[]=triggered&service_ids[]=" + world.ids["pagerduty_orders"]
    listed = raw(world, "GET", "/incidents", query=query)
    return listed.body["incidents"][0]["id"]


def _new(client, world: World, title: str = "orders 5xx", **extra) -> dict:
    service = {"id": world.ids["pagerduty_orders"], "type": "service_reference"}
    return client.rpost("incidents", json={"type": "incident", "title": title, "service": service, **extra})


# -- ids and reading ------------------------------------------------------------------------------------


def test_ids_are_pagerduty_shaped_deterministic_and_seed_incidents_are_numbered_by_creation(scene, served):
    server, world = served
    ids = world.ids
    assert all(ids[r].startswith("P") and len(ids[r]) == 7 for r in ("pd_mike", "pagerduty_orders", "pd_old"))
    assert World.build(scene).ids == ids
    assert len(world.events) == 0, "seed incidents are starting state, not events"
    client = official(server, world)
    listed = client.list_all("incidents")
    assert [(i["incident_number"], i["title"], i["status"]) for i in listed] == [
        (1, "late emails", "resolved"),
        (2, "slow invoices", "acknowledged"),
        (3, "stuck refunds", "triggered"),
    ]
    old = client.rget(f"incidents/{ids['pd_old']}")
    assert old["created_at"] == "2026-03-02T07:00:00Z" and old["summary"] == "[#2] slow invoices"
    assert [a["assignee"]["id"] for a in old["assignments"]] == [ids["pd_mike"]]
    assert old["assignments"][0]["assignee"] | {"self": None} == {
        "id": ids["pd_mike"],
        "type": "user_reference",
        "summary": "Mike",
        "self": None,
        "html_url": f"https://pd-office.pagerduty.com/users/{ids['pd_mike']}",
    }
    assert old["service"]["type"] == "service_reference" and old["service"]["summary"] == "billing"
    assert client.rget(old["service"])["name"] == "billing", "a reference's self URL is fetchable"
    done = client.rget(f"incidents/{ids['pd_done']}")
    assert done["assignments"] == [] and done["resolved_at"] == done["created_at"]
    assert done["urgency"] == "low"
    pending = client.rget(f"incidents/{ids['pd_pending']}")
    assert [a["assignee"]["summary"] for a in pending["assignments"]] == ["Lee"], "its service's policy"


def test_users_services_policies_schedules_and_oncalls_through_the_official_client(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    users = client.list_all("users")
    assert [(u["name"], u["email"], u["role"], u["type"]) for u in users][:2] == [
        ("Orders Bot", "bot@acme.example", "user", "user"),
        ("Mike", "mike@acme.example", "admin", "user"),
    ]
    assert client.find("users", "ann@acme.example", attribute="email")["id"] == ids["pd_ann"]
    assert client.rget(f"users/{ids['pd_lee']}")["name"] == "Lee"
    services = {s["name"]: s for s in client.iter_all("services")}
    assert services["orders"]["description"] == "Order intake" and services["orders"]["status"] == "active"
    assert services["billing"]["status"] == "critical", "billing has a triggered incident"
    assert services["orders"]["escalation_policy"]["id"] == ids["ep_orders"]
    policy = client.rget(f"escalation_policies/{ids['ep_orders']}")
    assert [[t["type"] for t in r["targets"]] for r in policy["escalation_rules"]] == [
        ["user_reference", "schedule_reference"],
        ["user_reference"],
    ]
    assert [s["id"] for s in policy["services"]] == [ids["pagerduty_orders"]]
    assert [p["name"] for p in client.iter_all("escalation_policies")] == ["orders", "billing"]
    schedule = client.rget(f"schedules/{ids['sched_primary']}")
    assert [u["summary"] for u in schedule["users"]] == ["Ann", "Lee"]
    assert schedule["final_schedule"]["rendered_schedule_entries"][0]["user"]["id"] == ids["pd_ann"]
    assert [s["name"] for s in client.iter_all("schedules")] == ["Primary"]
    oncalls = client.list_all("oncalls", params={"escalation_policy_ids[]": [ids["ep_orders"]]})
    assert [(o["user"]["summary"], o["escalation_level"], bool(o["schedule"])) for o in oncalls] == [
        ("Mike", 1, False),
        ("Ann", 1, True),
        ("Lee", 2, False),
    ]
    assert oncalls[1]["start"] == "2026-03-02T00:00:00Z" and oncalls[0]["start"] is None
    mine = client.list_all("oncalls", params={"user_ids": [ids["pd_lee"]]})
    assert [o["escalation_policy"]["summary"] for o in mine] == ["orders", "billing"]


def test_classic_pagination_offset_limit_more_and_total_only_when_asked(served):
    server, world = served
    client = official(server, world)
    first = client.get("incidents", params={"limit": 2}).json()
    assert (len(first["incidents"]), first["limit"], first["offset"], first["more"], first["total"]) == (
        2,
        2,
        0,
        True,
        None,
    )
    last = client.get("incidents", params={"limit": 2, "offset": 2, "total": "true"}).json()
    assert (len(last["incidents"]), last["more"], last["total"]) == (1, False, 3)
    assert client.get_total("incidents") == 3
    assert [i["incident_number"] for i in client.iter_all("incidents", page_size=1)] == [1, 2, 3]
    paged = [e["query"] for e in world.trace.to_list()][-3:]
    assert [(q["offset"], q["limit"]) for q in paged] == [(["0"], ["1"]), (["1"], ["1"]), (["2"], ["1"])]


def test_incident_filters_statuses_services_users_urgencies_and_sorting(served):
    server, world = served
    ids = world.ids
    client = official(server, world)

    def numbers(**params):
        return [i["incident_number"] for i in client.iter_all("incidents", params=params)]

    assert numbers(statuses=["triggered", "acknowledged"]) == [2, 3]
    assert numbers(**{"statuses[]": ["resolved"]}) == [1]
    assert numbers(service_ids=[ids["pagerduty_orders"]]) == []
    assert numbers(user_ids=[ids["pd_mike"]]) == [2], "user_ids: currently assigned (a resolved one has none)"
    assert numbers(urgencies=["low"]) == [1]
    assert numbers(sort_by="created_at:desc") == [3, 2, 1]
    assert numbers(date_range="all", **{"include[]": ["assignees"]}) == [1, 2, 3]
    assert numbers(since="2026-03-02T07:30:00Z") == [3]


# -- writing --------------------------------------------------------------------------------------------


def test_create_assigns_the_first_rule_of_the_service_policy_a_schedule_by_its_first_user(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    created = _new(client, world, body={"type": "incident_body", "details": "5xx above 10%"})
    assert (created["status"], created["incident_number"], created["urgency"]) == ("triggered", 4, "high")
    assert [a["assignee"]["id"] for a in created["assignments"]] == [ids["pd_mike"], ids["pd_ann"]]
    assert created["assigned_via"] == "escalation_policy" and created["body"]["details"] == "5xx above 10%"
    assert created["created_at"] == "2026-03-02T09:01:00Z", "the simulated time of the call"
    assert created["last_status_change_by"]["id"] == ids["pd_bot"], "the From user"
    direct = _new(client, world, "disk", urgency="low", assignments=[{"assignee": {"id": ids["pd_lee"]}}])
    assert [a["assignee"]["summary"] for a in direct["assignments"]] == ["Lee"]
    assert (direct["assigned_via"], direct["urgency"], direct["incident_number"]) == (
        "direct_assignment",
        "low",
        5,
    )
    billing = {"id": ids["ep_billing"], "type": "escalation_policy_reference"}
    by_policy = _new(client, world, "cpu", escalation_policy=billing)
    assert [a["assignee"]["summary"] for a in by_policy["assignments"]] == ["Lee"]
    assert by_policy["escalation_policy"]["id"] == ids["ep_billing"]
    assert created["id"] != direct["id"] and created["id"].startswith("P")
    events = world.events.of_type("incident_changed")
    assert [(e.data["from"], e.data["to"], e.data["seq"], e.data["ref"]) for e in events] == [
        (None, "triggered", 1, None),
        (None, "triggered", 2, None),
        (None, "triggered", 3, None),
    ]


def test_acknowledge_reassign_resolve_and_reopen_through_put(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    incident = _new(client, world)
    acked = client.rput(incident, json=to("acknowledged"))
    assert acked["status"] == "acknowledged"
    assert [a["acknowledger"]["id"] for a in acked["acknowledgements"]] == [ids["pd_bot"]]
    lee = [{"assignee": {"id": ids["pd_lee"], "type": "user_reference"}}]
    moved = client.rput(incident, json={"type": "incident_reference", "assignments": lee})
    assert moved["status"] == "acknowledged", "an acknowledged incident can be reassigned"
    assert [a["assignee"]["summary"] for a in moved["assignments"]] == ["Lee"]
    renamed = client.rput(incident, json={"type": "incident", "title": "orders 5xx (EU)", "urgency": "low"})
    assert (renamed["title"], renamed["urgency"], renamed["summary"]) == (
        "orders 5xx (EU)",
        "low",
        "[#4] orders 5xx (EU)",
    )
    resolved = client.rput(incident, json=to("resolved", resolution="rolled back"))
    assert resolved["status"] == "resolved" and resolved["assignments"] == []
    assert resolved["resolved_at"] == "2026-03-02T09:05:00Z"
    reopened = client.rput(incident, json=to("triggered"))
    assert reopened["resolved_at"] is None
    assert [a["assignee"]["summary"] for a in reopened["assignments"]] == ["Mike", "Ann"], "its policy again"
    events = world.events.of_type("incident_changed")
    changes = [(e.data["from"], e.data["to"], e.data["seq"]) for e in events]
    assert changes == [
        (None, "triggered", 1),
        ("triggered", "acknowledged", 2),
        ("acknowledged", "resolved", 5),
        ("resolved", "triggered", 6),
    ]
    state = world.final_state()["tools"]["pagerduty"]["incidents"][-1]
    assert state["first_acknowledged_at"] == "2026-03-02T09:02:00Z"
    assert state["first_resolved_at"] == "2026-03-02T09:05:00Z"


def test_bulk_update_and_notes_through_pdpyras(served):
    server, world = served
    ids = world.ids
    session = legacy(server, world)
    assert [i["incident_number"] for i in session.iter_all("incidents", page_size=2)] == [1, 2, 3]
    service = {"id": ids["pagerduty_orders"], "type": "service_reference"}
    created = session.rpost("incidents", json={"type": "incident", "title": "orders 5xx", "service": service})
    assert created["status"] == "triggered" and created["incident_number"] == 4
    updated = session.rput(
        "incidents",
        json=[to("acknowledged", id=created["id"]), to("resolved", id=ids["pd_pending"])],
    )
    assert [(i["id"], i["status"]) for i in updated] == [
        (created["id"], "acknowledged"),
        (ids["pd_pending"], "resolved"),
    ]
    single = session.rput(f"incidents/{created['id']}", json=to("resolved"))
    assert single["status"] == "resolved"
    note = session.rpost(f"incidents/{created['id']}/notes", json={"content": "Rolled back exports v2."})
    assert note["content"] == "Rolled back exports v2." and note["user"]["id"] == ids["pd_bot"]
    assert note["created_at"] == "2026-03-02T09:06:00Z", "call 6: two pages, create, bulk, put, note"
    notes = session.rget(f"incidents/{created['id']}/notes")
    assert [n["id"] for n in notes] == [note["id"]]
    assert session.rget(f"services/{ids['pagerduty_orders']}")["status"] == "active"
    assert session.find("escalation_policies", "billing")["id"] == ids["ep_billing"]
    assert [u["name"] for u in session.iter_all("users", params={"query": "ann"})] == ["Ann"]
    assert len(list(session.iter_all("oncalls"))) == 4


def test_a_resolved_incident_keeps_its_first_real_times_across_a_reopening(served):
    server, world = served
    client = official(server, world)
    incident = _new(client, world)
    for status in ("resolved", "acknowledged", "resolved"):
        client.rput(incident, json={"type": "incident_reference", "status": status})
    result = _check(world, service="pagerduty_orders", first=True, resolved_within=timedelta(minutes=1))
    assert result.passed and "resolved 1m after creation" in result.actual
    reopened = client.rget(incident)
    assert [a["acknowledger"]["id"] for a in reopened["acknowledgements"]] == []


# -- errors ---------------------------------------------------------------------------------------------


def test_wrong_or_missing_credentials_get_pagerdutys_401_and_are_traced(served):
    server, world = served
    status, body = _error(lambda: official(server, world, token="x" * 20).rget("incidents"))
    assert (status, body) == (401, {"error": {"message": "Authentication failed", "code": 2006}})
    bare = httpx.get(f"{server.root}/worlds/{world.id}/pagerduty/incidents")
    assert bare.status_code == 401 and bare.json()["error"]["code"] == 2006
    bearer = httpx.get(
        f"{server.root}/worlds/{world.id}/pagerduty/users",
        headers={"Authorization": f"Bearer {world.credentials['pagerduty']['token']}"},
    )
    assert bearer.status_code == 401, "a REST API key goes in as Token token=…"
    entries = world.trace.to_list()
    assert [(e["status"], e["worked"]) for e in entries] == [(401, False)] * 3
    assert world.credentials["pagerduty"]["token"] not in json.dumps(entries)


def test_writes_need_a_from_header_with_a_users_email(served):
    server, world = served
    ids = world.ids
    nobody = official(server, world, sender=None)
    expected = {
        "error": {
            "message": 'You must specify a user\'s email address in the "From" header to perform this action',
            "code": 2016,
        }
    }
    assert _error(lambda: _new(nobody, world)) == (400, expected)
    stranger = official(server, world, sender="eve@elsewhere.example")
    put = to("acknowledged")
    assert _error(lambda: stranger.rput(f"incidents/{ids['pd_pending']}", json=put)) == (400, expected)
    note = {"content": "hi"}
    assert _error(lambda: stranger.rpost(f"incidents/{ids['pd_old']}/notes", json=note))[0] == 400
    assert nobody.rget(f"incidents/{ids['pd_pending']}")["status"] == "triggered", "reads need no From"
    ann = official(server, world, sender="ANN@acme.example")
    acked = ann.rput(f"incidents/{ids['pd_pending']}", json=put)
    assert acked["acknowledgements"][0]["acknowledger"]["id"] == ids["pd_ann"], "any user; case-insensitive"
    assert [e["status"] for e in world.trace.to_list()] == [400, 400, 400, 200, 200]


def test_unknown_ids_invalid_values_and_bad_bodies_get_pagerdutys_errors(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    not_found = {"error": {"message": "Not Found", "code": 2100}}
    assert _error(lambda: client.rget("incidents/PNOTHRE")) == (404, not_found)
    assert _error(lambda: client.rget("users/PNOTHRE")) == (404, not_found)
    assert _error(lambda: client.rget("services/PNOTHRE"))[0] == 404
    assert _error(lambda: client.rget("escalation_policies/PNOTHRE"))[0] == 404
    assert _error(lambda: client.rget("schedules/PNOTHRE"))[0] == 404
    assert _error(lambda: client.rget("incidents/PNOTHRE/notes"))[0] == 404
    put = to("acknowledged")
    assert _error(lambda: client.rput("incidents/PNOTHRE", json=put))[0] == 404
    assert _error(lambda: client.rput("incidents", json=[{"id": "PNOTHRE", **put}]))[0] == 404
    status, body = _error(lambda: client.rput(f"incidents/{ids['pd_old']}", json={**put, "status": "closed"}))
    assert (status, body["error"]["code"], body["error"]["message"]) == (400, 2001, "Invalid Input Provided")
    assert body["error"]["errors"] == ["Status must be one of triggered, acknowledged, or resolved."]
    status, body = _error(lambda: _new(client, world, urgency="urgent"))
    assert (status, body["error"]["errors"]) == (400, ["Urgency must be one of high or low."])
    status, body = _error(lambda: client.list_all("incidents", params={"statuses": ["open"]}))
    assert (status, body["error"]["code"]) == (400, 2001)
    assert _error(lambda: client.rpost("incidents", json={"type": "incident", "title": "x"}))[0] == 400
    mike = [{"assignee": {"id": ids["pd_mike"]}}]
    both = {"assignments": mike, "escalation_policy": {"id": ids["ep_billing"]}}
    assert _error(lambda: _new(client, world, **both))[0] == 400
    assert _error(lambda: _new(client, world, assignments=[{"assignee": {"id": "PNOBODY"}}]))[0] == 400
    reassign = {"type": "incident", "assignments": mike}
    assert _error(lambda: client.rput(f"incidents/{ids['pd_done']}", json=reassign))[0] == 400, "resolved"
    json_type = {"Content-Type": "application/json"}
    broken = client.put(f"incidents/{ids['pd_old']}", content=b"{not json", headers=json_type)
    assert broken.status_code == 400 and broken.json()["error"]["code"] == 2001
    assert client.rget(f"incidents/{ids['pd_old']}")["status"] == "acknowledged", "nothing changed"
    entries = world.trace.to_list()
    assert all(not e["worked"] for e in entries[:-1]) and entries[-1]["worked"]
    assert not world.events.of_type("incident_changed"), "no failed call changed an incident"


def test_a_bulk_update_with_one_bad_item_changes_nothing(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    items = [
        {"id": ids["pd_pending"], "type": "incident_reference", "status": "resolved"},
        {"id": ids["pd_old"], "type": "incident_reference", "status": "snoozed"},
    ]
    assert _error(lambda: client.rput("incidents", json=items))[0] == 400
    assert client.rget(f"incidents/{ids['pd_pending']}")["status"] == "triggered"


def test_an_endpoint_not_simulated_is_pagerdutys_404_marked_a_coverage_gap(served):
    server, world = served
    client = official(server, world)
    answer = client.get("teams")
    assert answer.status_code == 404 and answer.json() == {"error": {"message": "Not Found", "code": 2100}}
    deleted = client.delete(f"incidents/{world.ids['pd_old']}")
    assert deleted.status_code == 404
    entries = world.trace.to_list()
    assert [(e["path"], e["coverage_gap"], e["worked"]) for e in entries] == [
        ("/teams", True, False),
        (f"/incidents/{world.ids['pd_old']}", True, False),
    ]


# -- the fault effect and the state check ---------------------------------------------------------------


def test_the_fault_effect_opens_a_triggered_incident_at_its_time(scene):
    world = World.build(scene)
    sim = world.simulator("pagerduty")
    at = world.scene.start + timedelta(seconds=30)
    sim.apply_effect("incident", {"service": "pagerduty_orders", "title": "orders 5xx", "at": at})
    [event] = world.events.of_type("incident_changed")
    assert (event.at, event.data["from"], event.data["to"], event.data["seq"], event.data["tool"]) == (
        at,
        None,
        "triggered",
        None,
        "pagerduty",
    )
    incident = world.final_state()["tools"]["pagerduty"]["incidents"][-1]
    assert (incident["number"], incident["status"], incident["created_at"]) == (
        4,
        "triggered",
        "2026-03-02T09:00:30Z",
    )
    assert incident["assigned_to"] == ["pd_mike", "pd_ann"]
    assert incident["changes"] == [
        {"at": "2026-03-02T09:00:30Z", "from": None, "to": "triggered", "seq": None, "origin": "fault"}
    ]
    result = _check(world, service="pagerduty_orders", first=True, status="triggered")
    assert result.passed and result.evidence == () and result.events == (event.n,)


def _set_on_call(scene, k: int, status: str) -> World:
    """A fault opens the orders incident at the start; the agent reads, and its call k (at +k minutes
    with per_call 1m) sets ``status``."""
    world = World.build(scene)
    iid = _opened(world)
    for _ in range(k - 2):
        raw(world, "GET", f"/incidents/{iid}")
    answer = raw(world, "PUT", f"/incidents/{iid}", {"incident": to(status)})
    assert answer.status == 200 and world.clock.calls == k
    return world


@pytest.mark.parametrize(
    "prop,status", [("acknowledged_within", "acknowledged"), ("resolved_within", "resolved")]
)
def test_within_flips_exactly_at_the_limit_in_simulated_time(scene, prop, status):
    on_time = _set_on_call(scene, 3, status)  # per_call 1m: call 3 at +3m
    late = _set_on_call(scene, 4, status)  # one more call before it: +4m
    spec = {"service": "pagerduty_orders", "first": True, prop: timedelta(minutes=3)}
    passed, failed = _check(on_time, **spec), _check(late, **spec)
    assert passed.passed and not failed.passed
    assert f"{status} 3m after creation" in passed.actual
    assert failed.explanation == (
        f'Incident #4 "orders 5xx" (the first incident of pagerduty_orders) fails {prop}: '
        f"expected {status} within 3m of creation, found {status} 4m after creation."
    )
    assert passed.evidence == (3,) and failed.evidence == (4,), "the call that changed it"
    assert len(passed.events) == 2, "opened by the fault, then changed by the agent"


def test_never_acknowledged_fails_and_a_seed_status_is_not_a_real_acknowledgement(served):
    server, world = served
    never = _check(world, ref="pd_pending", acknowledged_within=timedelta(hours=5))
    assert not never.passed and "never acknowledged during the trial" in never.actual
    seeded = _check(world, ref="pd_old", acknowledged_within=timedelta(hours=5), status="acknowledged")
    assert not seeded.passed and "status acknowledged" in seeded.actual
    why = 'Incident #2 "slow invoices" (incident pd_old) fails acknowledged_within'
    assert seeded.explanation.startswith(why)
    done = _check(world, ref="pd_done", resolved_within=timedelta(hours=5))
    assert not done.passed, "a seed resolution is not a first real resolution"
    client = official(server, world)
    client.rput(f"incidents/{world.ids['pd_pending']}", json=to("acknowledged"))
    acked = _check(world, ref="pd_pending", acknowledged_within=timedelta(hours=2), status="acknowledged")
    assert acked.passed and acked.evidence == (1,)
    assert "acknowledged 1h1m after creation" in acked.actual


def test_status_and_assigned_to_pass_and_fail_with_expected_and_actual(served):
    server, world = served
    ids = world.ids
    client = official(server, world)
    assert _check(world, ref="pd_old", status="acknowledged", assigned_to=["pd_mike"]).passed
    wrong = _check(world, ref="pd_old", status="resolved", assigned_to=["pd_ann"])
    assert not wrong.passed
    assert wrong.expected == "incident pd_old with status resolved; assigned to [pd_ann]"
    assert wrong.actual == 'incident #2 "slow invoices": status acknowledged; assigned to [pd_mike]'
    assert "status: expected status resolved, found status acknowledged" in wrong.explanation
    assert "assigned_to: expected assigned to [pd_ann], found assigned to [pd_mike]" in wrong.explanation
    people = [{"assignee": {"id": ids[u], "type": "user_reference"}} for u in ("pd_ann", "pd_lee")]
    client.rput(f"incidents/{ids['pd_pending']}", json={"type": "incident_reference", "assignments": people})
    assert _check(world, ref="pd_pending", assigned_to=["pd_lee", "pd_ann"]).passed, "any order"
    assert not _check(world, ref="pd_pending", assigned_to=["pd_lee"]).passed, "the exact set"
    client.rput(f"incidents/{ids['pd_pending']}", json={"type": "incident_reference", "status": "resolved"})
    held = _check(world, ref="pd_pending", status="resolved", assigned_to=["pd_ann", "pd_lee"])
    assert held.passed and "(held before its resolution)" in held.actual
    assert held.evidence == (1, 2)
    assert _check(world, ref="pd_done", assigned_to=["pd_lee"]).passed, "resolved seed: its policy's users"


def test_first_selects_the_earliest_incident_of_the_service_including_new_ones(scene):
    world = World.build(scene)
    missing = _check(world, service="pagerduty_orders", first=True, status="triggered")
    assert not missing.passed and missing.actual == "no incident of pagerduty_orders"
    assert "the first incident of pagerduty_orders" in missing.explanation
    made = _post(world, "first")
    assert made.status == 201
    sim = world.simulator("pagerduty")
    sim.apply_effect("incident", {"service": "pagerduty_orders", "title": "second", "at": world.clock.now})
    result = _check(world, service="pagerduty_orders", first=True, status="triggered")
    assert result.passed and result.actual.startswith('incident #4 "first"'), "same time: the lower number"
    billing = _check(world, service="pagerduty_billing", first=True, status="resolved")
    assert billing.passed and "late emails" in billing.actual, "seed incidents count, by creation time"


def test_the_reference_example_resolved_fast_passes_and_fails(scene):
    def trial(calls_before_resolving: int) -> dict:
        world = World.build(scene)
        iid = _opened(world)
        for _ in range(calls_before_resolving):
            raw(world, "GET", f"/incidents/{iid}")
        raw(world, "PUT", "/incidents", {"incidents": [to("resolved", id=iid)]})
        world.end()
        return evaluate(world)["checks"][0]

    fast, slow = trial(3), trial(4)
    assert (fast["id"], fast["status"], fast["evidence"]) == ("resolved_fast", "passed", [5])
    assert slow["status"] == "failed" and "found resolved 6m after creation" in slow["explanation"]


# -- determinism, snapshots, the final state -------------------------------------------------------------


def _script(world: World) -> list:
    answers = [_post(world, "a")]
    iid = answers[0].body["incident"]["id"]
    answers.append(raw(world, "PUT", f"/incidents/{iid}", {"incident": to("acknowledged", type="incident")}))
    answers.append(raw(world, "POST", f"/incidents/{iid}/notes", {"note": {"content": "looking"}}))
    answers.append(raw(world, "PUT", "/incidents", {"incidents": [to("resolved", id=iid)]}))
    answers.append(raw(world, "GET", "/incidents", query="total=true"))
    answers.append(raw(world, "GET", f"/incidents/{iid}/notes"))
    answers.append(raw(world, "GET", "/incidents", headers={"Authorization": "Token token=nope"}))
    return answers


def test_the_same_calls_give_identical_answers_state_trace_and_events(scene):
    one, two = World.build(scene), World.build(scene)
    first, second = _script(one), _script(two)
    assert one.id != two.id
    assert [a.status for a in first] == [201, 200, 200, 200, 200, 200, 401]

    def dump(world: World, answers) -> str:
        every = [[a.body for a in answers], world.states, world.trace.to_list(), world.events.to_list()]
        return json.dumps([*every, world.final_state()], sort_keys=True).replace(world.id, "ID")

    assert dump(one, first) == dump(two, second)


def test_a_snapshot_restored_midway_carries_on(scene):
    world = World.build(scene)
    made = _post(world, "a")
    restored = World.restore(scene, json.loads(json.dumps(world.snapshot())))
    iid = made.body["incident"]["id"]
    raw(restored, "PUT", f"/incidents/{iid}", {"incident": {"type": "incident", "status": "resolved"}})
    again = _post(restored, "b")
    assert again.body["incident"]["incident_number"] == 5 and again.body["incident"]["id"] != iid
    result = _check(restored, service="pagerduty_orders", first=True, resolved_within=timedelta(minutes=1))
    assert result.passed and result.evidence == (1, 2)


def test_the_final_state_reads_by_ref_and_name(served):
    server, world = served
    client = official(server, world)
    incident = _new(client, world)
    client.rpost(f"incidents/{incident['id']}/notes", json={"content": "on it"})
    state = world.final_state()["tools"]["pagerduty"]
    assert state["services"]["pagerduty_orders"] == {
        "id": world.ids["pagerduty_orders"],
        "name": "orders",
        "escalation_policy": "ep_orders",
    }
    assert state["escalation_policies"]["ep_orders"]["rules"] == [["pd_mike", "sched_primary"], ["pd_lee"]]
    last = state["incidents"][-1]
    assert (last["title"], last["service"], last["assigned_to"]) == (
        "orders 5xx",
        "pagerduty_orders",
        ["pd_mike", "pd_ann"],
    )
    assert last["notes"] == [{"at": "2026-03-02T09:02:00Z", "from": "pd_bot", "content": "on it"}]
    assert state["incidents"][0] == {
        "number": 1,
        "id": world.ids["pd_done"],
        "title": "late emails",
        "service": "pagerduty_billing",
        "status": "resolved",
        "urgency": "low",
        "created_at": "2026-03-02T06:00:00Z",
        "assigned_to": [],
        "ref": "pd_done",
        "seed": True,
        "assigned_before_resolution": ["pd_lee"],
    }
