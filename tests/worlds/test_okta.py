"""The simulated Okta Users API, driven by the official client (the ``okta`` SDK 3.x, unmodified, async on
aiohttp) against a world served on loopback, plus the okta.user state check and the trace.

The SDK takes the world's base URL as ``orgUrl`` and keeps its path prefix (``/worlds/<id>/okta``) for
every call. Two of its limits shape these tests: it refuses an ``http`` orgUrl unless the documented
``OKTA_TESTING_TESTINGDISABLEHTTPSCHECK`` setting is on (its ``testing`` config section cannot be passed
to ``Client()``, which files every key under ``client``), and it answers with the parsed body only, so
the raw ``Link`` headers, the exact error bodies and a missing ``Authorization`` header are checked with
httpx in Okta's wire format. The SDK's own pagination helpers (``paginate_pages``, which read the ``after``
cursor from the ``Link`` header) page through the lists.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.support.served_world import served_world
from worlds.engine import load_scene
from worlds.engine.http import Request
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

if TYPE_CHECKING:
    from okta.client import Client

# The SDK is imported by the tests that call it, not at collection: importing it costs about 7 CPU-s (its
# pydantic models), which every pytest process that collected this module used to pay. Its tests are one
# unit of work (pytest.ini: --dist loadgroup), so one process imports it.
pytestmark = pytest.mark.xdist_group("okta-sdk")

SCENES = Path(__file__).parent / "scenes"
SCENE = (SCENES / "okta.yaml").read_text()
ALIVE = 9  # every seed user but the deprovisioned one


@pytest.fixture(autouse=True)
def _allow_http(monkeypatch):
    monkeypatch.setenv("OKTA_TESTING_TESTINGDISABLEHTTPSCHECK", "true")


@pytest.fixture
def org():
    with served_world(load_scene(SCENE, "okta.yaml")) as (server, world):
        yield Org(world, server)


class Org:
    """A world with its server: ``sdk(lambda c: c.get_user(...))`` runs one SDK call; ``raw`` is httpx."""

    def __init__(self, world: World, server: WorldServer) -> None:
        self.world = world
        self.base = world.for_agent(server.root)["tools"]["okta"]["base_url"].rstrip("/")
        self.token = world.credentials["okta"]["token"]
        self.raw = httpx.Client(base_url=self.base, headers={"Authorization": f"SSWS {self.token}"})

    def client(self, token: str | None = None) -> Client:
        from okta.client import Client

        return Client({"orgUrl": self.base, "token": token or self.token})

    def sdk(self, call, token: str | None = None) -> tuple[Any, Any]:
        """(data, error) of one SDK call: the SDK answers (data, response, error) or (response, error)."""

        async def run():
            return await call(self.client(token))

        result = asyncio.run(run())
        return (result[0] if len(result) == 3 else None), result[-1]

    def pages(self, **kwargs) -> list[list[str]]:
        from okta.pagination import paginate_pages

        async def run():
            client = self.client()
            pages = paginate_pages(client.list_users, **kwargs)
            return [[u.profile.login for u in page] async for page, _, _ in pages]

        return asyncio.run(run())

    def logins(self, **kwargs) -> list[str]:
        users, error = self.sdk(lambda c: c.list_users(**kwargs))
        assert error is None, error
        return sorted(u.profile.login for u in users)

    def status(self, ref: str) -> str:
        user, error = self.sdk(lambda c: c.get_user(self.world.ids[ref]))
        assert error is None, error
        return user.status.value

    def check(self, **spec):
        return self.world.state_check("okta.user", spec)


def _error_body(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"errorCode", "errorSummary", "errorLink", "errorId", "errorCauses"}
    assert body["errorLink"] == body["errorCode"] and body["errorId"].startswith("oae")
    return body


# -- reading ------------------------------------------------------------------------------------------


def test_users_have_okta_ids_and_parse_as_the_sdk_user_model(org):
    ids = org.world.ids
    assert all(ids[r].startswith("00u") and len(ids[r]) == 20 for r in ("okta_jane", "okta_bob"))
    assert World.build(load_scene(SCENE, "okta.yaml")).ids == ids
    jane, error = org.sdk(lambda c: c.get_user("jane@acme.example"))
    assert error is None
    assert (jane.id, jane.status.value, jane.profile.first_name, jane.profile.email) == (
        ids["okta_jane"],
        "ACTIVE",
        "Jane",
        "jane@acme.example",
    )
    assert jane.credentials.provider.type.value == "OKTA" and jane.type.id.startswith("oty")
    assert jane.links.var_self.href == f"{org.base}/api/v1/users/{ids['okta_jane']}"
    assert jane.links.suspend.href.endswith("/lifecycle/suspend") and jane.links.unsuspend is None
    assert jane.created.isoformat() == "2026-01-31T09:00:00+00:00"
    raw = org.raw.get(f"/api/v1/users/{ids['okta_bob']}").json()
    assert raw["created"] == "2026-01-31T09:00:00.000Z", "Okta writes milliseconds and Z"
    never_yet = (raw["activated"], raw["lastLogin"], raw["passwordChanged"])
    assert raw["status"] == "STAGED" and never_yet == (None, None, None)
    assert set(raw["_links"]) >= {"self", "activate", "deactivate", "type"}


def test_get_user_by_id_login_any_case_or_unambiguous_shortname_else_404(org):
    jane = org.world.ids["okta_jane"]
    for ident in (jane, "jane@acme.example", "JANE@ACME.EXAMPLE", "jane"):
        user, error = org.sdk(lambda c, i=ident: c.get_user(i))
        assert error is None and user.id == jane
    _, error = org.sdk(lambda c: c.get_user("nobody@acme.example"))
    assert (error.status, error.error_code) == (404, "E0000007")
    body = _error_body(org.raw.get("/api/v1/users/00uNOTHERE"))
    assert body["errorSummary"] == "Not found: Resource not found: 00uNOTHERE (User)"
    assert body["errorCauses"] == []


def test_list_leaves_out_deprovisioned_users_and_lists_in_id_order(org):
    users, error = org.sdk(lambda c: c.list_users())
    assert error is None
    assert [u.id for u in users] == sorted(org.world.ids[r] for r in org.world.ids if r != "okta_old")
    assert len(users) == ALIVE


def test_q_is_a_prefix_match_on_first_last_name_email_and_login_without_deprovisioned(org):
    assert org.logins(q="ja") == ["james@acme.example", "jane@acme.example", "sue@acme.example"]
    assert org.logins(q="PARK") == ["james@acme.example"], "last name, any case"
    assert org.logins(q="jp@mail") == ["james@acme.example"], "email"
    assert org.logins(q="rec@") == ["rec@acme.example"], "login"
    assert org.logins(q="old") == [], "deprovisioned users are left out"
    assert len(org.logins(q="", limit=2)) == 2
    response = org.raw.get("/api/v1/users", params={"q": "j", "limit": 1})
    assert 'rel="next"' not in response.headers["link"], "q answers one page (Okta does not paginate q)"


def test_filter_status_eq_with_or_and_and_includes_deprovisioned(org):
    assert org.logins(filter='status eq "DEPROVISIONED"') == ["old@acme.example"]
    assert org.logins(filter='status eq "STAGED" or status eq "SUSPENDED"') == [
        "bob@acme.example",
        "pat@acme.example",
        "sue@acme.example",
    ]
    assert org.logins(filter='status eq "STAGED" and profile.firstName eq "Pat"') == ["pat@acme.example"]
    assert org.logins(filter='status eq "staged"') == [], "filter values are exact"
    assert org.logins(filter='lastUpdated gt "2026-01-01T00:00:00.000Z" and id eq "nope"') == []
    assert len(org.logins(filter='lastUpdated lt "2026-03-01T00:00:00.000Z"')) == ALIVE + 1
    _, error = org.sdk(lambda c: c.list_users(filter='profile.login sw "ja"'))
    assert (error.status, error.error_code) == (400, "E0000031")
    assert error.error_summary == "Invalid search criteria."


def test_search_eq_and_sw_on_status_login_email_with_and_or(org):
    assert org.logins(search='profile.login eq "JANE@acme.example"') == ["jane@acme.example"]
    assert org.logins(search='profile.login sw "ja"') == ["james@acme.example", "jane@acme.example"]
    assert org.logins(search='profile.email eq "jp@mail.example"') == ["james@acme.example"]
    assert org.logins(search='profile.email sw "JP@"') == ["james@acme.example"]
    assert org.logins(search='status eq "deprovisioned"') == ["old@acme.example"], "values ignore case"
    assert org.logins(search='status sw "PASS"') == ["exp@acme.example"]
    assert org.logins(search='status eq "ACTIVE" and profile.login sw "ja"') == [
        "james@acme.example",
        "jane@acme.example",
    ]
    either = 'status eq "LOCKED_OUT" or profile.email sw "sue" AND status eq "SUSPENDED"'  # and binds first
    assert org.logins(search=either) == [
        "lou@acme.example",
        "sue@acme.example",
    ]
    assert org.logins(search='(status eq "STAGED" or status eq "ACTIVE") and profile.login sw "b"') == [
        "bob@acme.example"
    ]
    for bad in (
        'profile.firstName eq "Jane"',  # attribute not searchable here
        'profile.login co "ane"',  # operator not supported here
        'status ne "ACTIVE"',
        "status eq ACTIVE",  # value not quoted
        'status eq "ACTIVE" and',
        '(status eq "ACTIVE"',
        'status eq "ACTIVE" xor status eq "STAGED"',
    ):
        _, error = org.sdk(lambda c, b=bad: c.list_users(search=b))
        assert (error.status, error.error_code) == (400, "E0000031"), bad
    body = _error_body(org.raw.get("/api/v1/users", params={"search": 'profile.login co "a"'}))
    assert body["errorSummary"] == "Invalid search criteria." and body["errorCauses"] == []
    active = 'status eq "ACTIVE"'
    both = org.raw.get("/api/v1/users", params={"search": active, "filter": active})
    assert (both.status_code, both.json()["errorCode"]) == (400, "E0000033")


def test_pagination_follows_the_after_cursor_of_the_link_header(org):
    from okta.pagination import PaginationHelper, paginate_all

    pages = org.pages(limit=4)
    assert [len(p) for p in pages] == [4, 4, 1]
    assert sorted(login for p in pages for login in p) == org.logins()

    async def every():
        users = paginate_all(org.client().list_users, limit=2, search='status sw "S"')
        return [u.profile.login async for u in users]

    assert sorted(asyncio.run(every())) == ["bob@acme.example", "pat@acme.example", "sue@acme.example"]
    first = org.raw.get("/api/v1/users", params={"limit": 1, "filter": 'status eq "ACTIVE"'})
    self_link, next_link = first.headers["link"].split(", ")
    assert self_link == f'<{org.base}/api/v1/users?limit=1&filter=status%20eq%20%22ACTIVE%22>; rel="self"'
    last_id = first.json()[-1]["id"]
    assert next_link == (
        f'<{org.base}/api/v1/users?limit=1&filter=status%20eq%20%22ACTIVE%22&after={last_id}>; rel="next"'
    )
    assert PaginationHelper.extract_next_cursor(first.headers) == last_id
    follow = httpx.get(next_link[1 : next_link.index(">")], headers={"Authorization": f"SSWS {org.token}"})
    assert follow.status_code == 200 and all(u["id"] > last_id for u in follow.json())
    assert 'rel="next"' not in follow.headers["link"], "the last page has only its self link"
    assert org.raw.get("/api/v1/users", params={"limit": "many"}).json()["errorCode"] == "E0000001"


# -- lifecycle ----------------------------------------------------------------------------------------

CALLS = {
    "activate": lambda uid: lambda c: c.activate_user(uid, send_email=True),
    "deactivate": lambda uid: lambda c: c.deactivate_user(uid),
    "suspend": lambda uid: lambda c: c.suspend_user(uid),
    "unsuspend": lambda uid: lambda c: c.unsuspend_user(uid),
    "unlock": lambda uid: lambda c: c.unlock_user(uid),
    "reset_password": lambda uid: lambda c: c.reset_password(uid, send_email=True),
}


@pytest.mark.parametrize(
    ("operation", "ref", "after"),
    [
        ("activate", "okta_bob", "PROVISIONED"),  # no password yet: the welcome flow is pending
        ("activate", "okta_pat", "ACTIVE"),  # a password was set before activation
        ("activate", "okta_old", "ACTIVE"),
        ("deactivate", "okta_jane", "DEPROVISIONED"),
        ("deactivate", "okta_bob", "DEPROVISIONED"),
        ("suspend", "okta_jane", "SUSPENDED"),
        ("unsuspend", "okta_sue", "ACTIVE"),
        ("unlock", "okta_lou", "ACTIVE"),
        ("unlock", "okta_jane", "ACTIVE"),
        ("reset_password", "okta_jane", "RECOVERY"),
        ("reset_password", "okta_exp", "RECOVERY"),
    ],
)
def test_lifecycle_transition_allowed(org, operation, ref, after):
    uid = org.world.ids[ref]
    before = org.world.states["okta"]["users"][uid]["status"]
    _, error = org.sdk(CALLS[operation](uid))
    assert error is None, error
    assert org.status(ref) == after
    raw = org.raw.get(f"/api/v1/users/{uid}").json()
    lifecycle = org.world.trace.to_list()[0]  # the call's simulated time, written as Okta writes it
    assert raw["lastUpdated"] == lifecycle["at"].replace("Z", ".000Z")
    if before != after:
        assert raw["statusChanged"] == raw["lastUpdated"]
    else:
        assert raw["statusChanged"] == raw["created"], "no status change, statusChanged stays"
    assert org.check(user=ref, status=after).evidence == (lifecycle["seq"],)


@pytest.mark.parametrize(
    ("operation", "ref", "status", "code"),
    [
        ("activate", "okta_jane", 403, "E0000016"),
        ("activate", "okta_sue", 403, "E0000016"),
        ("deactivate", "okta_old", 403, "E0000038"),
        ("suspend", "okta_bob", 400, "E0000001"),
        ("suspend", "okta_sue", 400, "E0000001"),
        ("unsuspend", "okta_jane", 400, "E0000001"),
        ("unlock", "okta_sue", 403, "E0000032"),
        ("reset_password", "okta_bob", 403, "E0000038"),
        ("reset_password", "okta_sue", 403, "E0000038"),
    ],
)
def test_lifecycle_transition_forbidden(org, operation, ref, status, code):
    before = org.status(ref)
    _, error = org.sdk(CALLS[operation](org.world.ids[ref]))
    assert (error.status, error.error_code) == (status, code)
    assert org.status(ref) == before
    assert org.world.trace.to_list()[-2]["status"] == status, "the failed call is traced with its status"
    assert org.check(user=ref, status=before).evidence == ()


def test_forbidden_transitions_answer_oktas_wording(org):
    ids = org.world.ids
    active = _error_body(org.raw.post(f"/api/v1/users/{ids['okta_jane']}/lifecycle/activate"))
    assert active["errorSummary"] == "Activation failed because the user is already active"
    suspend = _error_body(org.raw.post(f"/api/v1/users/{ids['okta_bob']}/lifecycle/suspend"))
    assert suspend["errorSummary"] == "Api validation failed: status"
    cause = "status: the user must be ACTIVE to suspend it; it is STAGED"
    assert suspend["errorCauses"] == [{"errorSummary": cause}]
    unlock = _error_body(org.raw.post(f"/api/v1/users/{ids['okta_bob']}/lifecycle/unlock"))
    assert unlock["errorSummary"] == "Unlock is not allowed for this user."
    again = _error_body(org.raw.post(f"/api/v1/users/{ids['okta_old']}/lifecycle/deactivate"))
    assert again["errorSummary"] == "This operation is not allowed in the user's current status."
    missing = org.raw.post("/api/v1/users/ghost@acme.example/lifecycle/suspend")
    assert (missing.status_code, missing.json()["errorCode"]) == (404, "E0000007")


def test_activate_and_reset_password_answer_their_links_when_send_email_is_false(org):
    ids = org.world.ids
    token, error = org.sdk(lambda c: c.activate_user(ids["okta_bob"], send_email=False))
    assert error is None
    assert token.activation_url == f"{org.base}/welcome/{token.activation_token}"
    assert len(token.activation_token) == 20
    reset, error = org.sdk(lambda c: c.reset_password(ids["okta_jane"], send_email=False))
    assert error is None and reset.reset_password_url.startswith(f"{org.base}/reset_password/")
    assert org.raw.post(f"/api/v1/users/{ids['okta_lou']}/lifecycle/reset_password").json() == {}
    reset = f"/api/v1/users/{ids['okta_rec']}/lifecycle/reset_password"
    bad = org.raw.post(reset, params={"sendEmail": "maybe"})
    assert (bad.status_code, bad.json()["errorCode"]) == (400, "E0000001")
    activated = org.raw.get(f"/api/v1/users/{ids['okta_bob']}").json()
    assert activated["activated"] == activated["statusChanged"] and activated["activated"] is not None


def test_delete_deactivates_then_deletes_then_404(org):
    jane = org.world.ids["okta_jane"]
    assert org.sdk(lambda c: c.delete_user(jane)) == (None, None)
    assert org.status("okta_jane") == "DEPROVISIONED"
    assert "jane@acme.example" not in org.logins()
    assert org.sdk(lambda c: c.delete_user("jane@acme.example")) == (None, None)
    _, error = org.sdk(lambda c: c.get_user(jane))
    assert (error.status, error.error_code) == (404, "E0000007")
    _, error = org.sdk(lambda c: c.delete_user(jane))
    assert (error.status, error.error_code) == (404, "E0000007")
    assert org.logins(filter='status eq "DEPROVISIONED"') == ["old@acme.example"]
    statuses = [(e["method"], e["status"]) for e in org.world.trace.to_list()]
    assert statuses[-4:] == [("DELETE", 204), ("GET", 404), ("DELETE", 404), ("GET", 200)]
    assert org.world.final_state()["tools"]["okta"]["deleted"] == {
        "jane@acme.example": {"id": jane, "ref": "okta_jane", "changed_by": [1, 4]}
    }


# -- errors, gaps and the trace ----------------------------------------------------------------------


def test_wrong_or_missing_token_is_oktas_401_and_traced(org):
    _, error = org.sdk(lambda c: c.list_users(), token="00" + "x" * 40)
    assert (error.status, error.error_code) == (401, "E0000011")
    assert error.error_summary == "Invalid token provided"
    missing = httpx.get(f"{org.base}/api/v1/users")
    assert missing.status_code == 401 and _error_body(missing)["errorSummary"] == "Invalid token provided"
    bearer = httpx.get(f"{org.base}/api/v1/users", headers={"Authorization": f"Bearer {org.token}"})
    assert bearer.status_code == 401
    assert org.raw.get("/api/v1/users").status_code == 200, "SSWS with a space works too"
    trace = org.world.trace.to_list()
    assert [e["status"] for e in trace] == [401, 401, 401, 200]
    assert org.token not in json.dumps(trace)


def test_unimplemented_endpoints_are_coverage_gaps_in_oktas_404_shape(org):
    jane = org.world.ids["okta_jane"]
    for method, path in (
        ("GET", "/api/v1/groups"),
        ("POST", f"/api/v1/users/{jane}/lifecycle/expire_password"),
        ("PUT", f"/api/v1/users/{jane}"),
    ):
        response = org.raw.request(method, path, json={} if method != "GET" else None)
        assert response.status_code == 404 and _error_body(response)["errorCode"] == "E0000008"
    assert [e["coverage_gap"] for e in org.world.trace.to_list()] == [True, True, True]
    assert org.status("okta_jane") == "ACTIVE"


def test_same_calls_give_identical_answers_and_state():
    scene = load_scene(SCENE, "okta.yaml")
    token = {"okta": {"token": "00" + "t" * 40}}
    calls = [
        ("GET", "/api/v1/users", "limit=3"),
        ("POST", "/api/v1/users/bob@acme.example/lifecycle/activate", "sendEmail=false"),
        ("POST", "/api/v1/users/jane/lifecycle/suspend", ""),
        ("POST", "/api/v1/users/jane/lifecycle/suspend", ""),
        ("DELETE", "/api/v1/users/sue@acme.example", ""),
        ("GET", "/api/v1/users", 'search=status eq "SUSPENDED"'),
    ]
    answers = []
    for _ in range(2):
        world = World.build(scene, "w1", token, cached=False)
        headers = {"Authorization": "SSWS " + "00" + "t" * 40, "Host": "console.example"}
        got = [world.call("okta", Request.make(m, p, q, headers)) for m, p, q in calls]
        answers.append(([(r.status, r.content(), r.headers) for r in got], world.final_state(), world.states))
    assert answers[0] == answers[1]
    assert answers[0][0][3][0] == 400


# -- the okta.user state check ------------------------------------------------------------------------


def test_status_check_passes_and_fails_by_ref_and_by_login(org):
    jane = org.world.ids["okta_jane"]
    assert org.sdk(lambda c: c.suspend_user(jane))[1] is None
    for user in ("okta_jane", "jane@acme.example", "JANE@acme.example"):
        result = org.check(user=user, status="SUSPENDED")
        assert result.passed and result.evidence == (1,)
    miss = org.check(user="okta_jane", status="ACTIVE")
    assert not miss.passed and miss.evidence == (1,)
    assert miss.expected == "Okta user okta_jane (jane@acme.example) with status ACTIVE"
    assert miss.actual == "okta_jane (jane@acme.example) exists with status SUSPENDED"
    assert "ACTIVE" in miss.explanation and "SUSPENDED" in miss.explanation
    by_login = org.check(user="jane@acme.example", status="ACTIVE")
    assert not by_login.passed and by_login.actual == "jane@acme.example exists with status SUSPENDED"
    scene_check = org.world.scene.checks[0]
    assert scene_check.id == "jane_suspended"


def test_status_in_check_passes_and_fails(org):
    bob = org.world.ids["okta_bob"]
    assert org.sdk(lambda c: c.activate_user(bob, send_email=True))[1] is None
    passed = org.check(user="okta_bob", status_in=["ACTIVE", "PROVISIONED"])
    assert passed.passed and passed.evidence == (1,)
    failed = org.check(user="bob@acme.example", status_in=["ACTIVE", "SUSPENDED"])
    assert not failed.passed
    assert failed.expected == "Okta user bob@acme.example with a status in ACTIVE, SUSPENDED"
    assert failed.actual == "bob@acme.example exists with status PROVISIONED"


def test_exists_false_check_passes_only_once_deleted_or_never_existed(org):
    sue = org.world.ids["okta_sue"]
    assert not org.check(user="okta_sue", exists=False).passed
    assert org.sdk(lambda c: c.delete_user(sue))[1] is None
    still = org.check(user="sue@acme.example", exists=False)
    assert not still.passed and still.actual == "sue@acme.example exists with status DEPROVISIONED"
    assert org.sdk(lambda c: c.delete_user(sue))[1] is None
    for user in ("okta_sue", "sue@acme.example"):
        gone = org.check(user=user, exists=False)
        assert gone.passed and gone.evidence == (1, 2)
    assert gone.expected == "Okta user sue@acme.example no longer exists"
    deleted = org.check(user="okta_sue", status="DEPROVISIONED")
    assert not deleted.passed and deleted.actual == "okta_sue (sue@acme.example) no longer exists (deleted)"
    assert not org.check(user="okta_sue", status_in=["DEPROVISIONED"]).passed
    never = org.check(user="ghost@acme.example", exists=False)
    assert never.passed and never.evidence == ()
    assert never.actual == "ghost@acme.example never existed in this world"
    never_status = org.check(user="ghost@acme.example", status="ACTIVE")
    assert not never_status.passed and "never existed" in never_status.explanation


def test_written_check_resolves_a_ref_against_the_scene(org):
    assert org.world.state_check("okta.user", {"user": "$okta_jane", "status": "ACTIVE"}, written=True).passed
    unknown = org.world.state_check("okta.user", {"user": "$okta_nobody", "status": "ACTIVE"}, written=True)
    assert not unknown.passed and "okta_nobody" in unknown.actual


def test_final_state_shows_users_by_login(org):
    assert org.sdk(lambda c: c.suspend_user("jane@acme.example"))[1] is None
    users = org.world.final_state()["tools"]["okta"]["users"]
    assert users["jane@acme.example"] == {
        "id": org.world.ids["okta_jane"],
        "ref": "okta_jane",
        "status": "SUSPENDED",
        "status_changed": "2026-03-02T09:00:01.000Z",
        "changed_by": [1],
    }
    assert users["bob@acme.example"]["status"] == "STAGED" and "changed_by" not in users["bob@acme.example"]
