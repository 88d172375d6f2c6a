"""The simulated Datadog, driven by the official client (datadog-api-client, unmodified) against a world
served on loopback, plus the datadog.monitor and datadog.downtime state checks, the datadog.monitor
fault effect and the trace.

The client is pointed with ``Configuration(host=<base_url>)``: it joins ``host + "/api/v1/..."``, so a
path prefix works; given the base URL with its trailing slash it asks for ``...datadog//api/v1/...``,
which the simulator reads as one slash. The client no longer has the v1 mute/unmute endpoints
(``POST /api/v1/monitor/{id}/mute``): those calls, and the error cases the client refuses to send
(invalid enum values, which it checks before sending), go through httpx in the client's wire format.
"""

from __future__ import annotations

import json
import warnings
from datetime import timedelta

import httpx
import pytest
from datadog_api_client import ApiClient, Configuration
from datadog_api_client.exceptions import ApiException
from datadog_api_client.v1.api.dashboards_api import DashboardsApi
from datadog_api_client.v1.api.downtimes_api import DowntimesApi as DowntimesV1
from datadog_api_client.v1.api.events_api import EventsApi
from datadog_api_client.v1.api.monitors_api import MonitorsApi
from datadog_api_client.v1.model.downtime import Downtime
from datadog_api_client.v1.model.event_create_request import EventCreateRequest
from datadog_api_client.v1.model.monitor_update_request import MonitorUpdateRequest
from datadog_api_client.v2.api.downtimes_api import DowntimesApi as DowntimesV2
from datadog_api_client.v2.api.logs_api import LogsApi
from datadog_api_client.v2.model.downtime_create_request import DowntimeCreateRequest
from datadog_api_client.v2.model.downtime_create_request_attributes import DowntimeCreateRequestAttributes
from datadog_api_client.v2.model.downtime_create_request_data import DowntimeCreateRequestData
from datadog_api_client.v2.model.downtime_monitor_identifier_id import DowntimeMonitorIdentifierId
from datadog_api_client.v2.model.downtime_monitor_identifier_tags import DowntimeMonitorIdentifierTags
from datadog_api_client.v2.model.downtime_resource_type import DowntimeResourceType
from datadog_api_client.v2.model.downtime_schedule_one_time_create_update_request import (
    DowntimeScheduleOneTimeCreateUpdateRequest,
)
from datadog_api_client.v2.model.downtime_update_request import DowntimeUpdateRequest
from datadog_api_client.v2.model.downtime_update_request_attributes import DowntimeUpdateRequestAttributes
from datadog_api_client.v2.model.downtime_update_request_data import DowntimeUpdateRequestData
from datadog_api_client.v2.model.logs_list_request import LogsListRequest
from datadog_api_client.v2.model.logs_list_request_page import LogsListRequestPage
from datadog_api_client.v2.model.logs_query_filter import LogsQueryFilter
from datadog_api_client.v2.model.logs_sort import LogsSort

from tests.support.served_world import served_world
from worlds.engine import load_scene
from worlds.engine.http import Request
from worlds.engine.problems import SceneInvalid
from worlds.engine.schema import get_tool
from worlds.engine.serve import WorldServer
from worlds.engine.world import World

SCENE = """
scene: dd-office
task: Keep orders quiet while the fix ships.
clock: { start: "2026-03-02T09:00:00Z", per_call: 1s }
world:
  datadog:
    monitors:
      datadog_orders:  { name: "orders 5xx", state: OK, query: "sum:orders.5xx{service:orders,env:prod} > 10",
                         tags: ["team:orders", "service:orders"] }
      datadog_billing: { name: "billing latency", state: Alert, tags: ["team:billing"] }
      datadog_disk:    { name: "disk full", state: Warn, type: "query alert",
                         query: "avg(last_5m):avg:system.disk.in_use{host:db1} > 0.9", message: "Disk!" }
      datadog_logs:    { name: "orders errors", state: "No Data",
                         query: "logs(\\"service:orders\\").rollup(\\"count\\").last(\\"5m\\") > 5" }
    dashboards:
      dd_dash: { title: "Orders overview", text: "Runbook: turn the beta flag off." }
      dd_bare: { title: "Empty" }
    events:
      dd_deploy: { title: "Deployed exports v2", text: "v2 is out", at: -30m, tags: ["service:orders"] }
      dd_old:    { title: "Old restart", at: -3h, tags: ["service:billing"] }
    logs:
      dd_log1: { text: "export job dropped for beta workspace", at: -5m, service: orders, status: error,
                 tags: ["env:prod"] }
      dd_log2: { text: "export job done", at: -4m, service: orders, tags: ["env:prod"] }
      dd_log3: { text: "invoice sent", at: -3m, service: billing, tags: ["env:prod"] }
      dd_log4: { text: "export job ancient", at: -2h, service: orders }
checks:
  - id: monitor_ok
    state: { datadog.monitor: $datadog_orders, is: OK }
  - id: muted_briefly
    state: { datadog.downtime: { monitor: $datadog_orders, remaining_gte: 1m, duration_lte: 10m } }
  - id: muted_safely
    state: { datadog.downtime: { monitor: $datadog_orders, remaining_gte: 1m, duration_lte: 10m,
                                 reject_active_unsafe: true } }
"""


def scene(text: str = SCENE):
    return load_scene(text, "dd.yaml")


class Office:
    """A world served on loopback and the official client's APIs pointed at it."""

    def __init__(self, world: World, server: WorldServer, **keys: str) -> None:
        self.world = world
        tool = world.for_agent(server.root)["tools"]["datadog"]
        self.base = tool["base_url"]
        self.keys = {"api_key": tool["api_key"], "app_key": tool["app_key"], **keys}
        config = Configuration(host=self.base.rstrip("/"))  # the client appends "/api/v1/..."
        config.api_key["apiKeyAuth"] = self.keys["api_key"]
        config.api_key["appKeyAuth"] = self.keys["app_key"]
        self.api = ApiClient(config)
        self.monitors = MonitorsApi(self.api)
        self.v1 = DowntimesV1(self.api)
        self.v2 = DowntimesV2(self.api)
        self.events = EventsApi(self.api)
        self.dashboards = DashboardsApi(self.api)
        self.logs = LogsApi(self.api)

    def id(self, ref: str):
        return self.world.ids[ref]

    @property
    def now(self):
        return self.world.clock.now

    def http(self, method: str, path: str, **kwargs) -> httpx.Response:
        """A call in the client's wire format (the keys in DD-API-KEY and DD-APPLICATION-KEY)."""
        headers = {"DD-API-KEY": self.keys["api_key"], "DD-APPLICATION-KEY": self.keys["app_key"]}
        headers |= kwargs.pop("headers", {})
        return httpx.request(method, self.base + path.lstrip("/"), headers=headers, **kwargs)

    def mute(self, ref: str, **body) -> httpx.Response:
        return self.http("POST", f"api/v1/monitor/{self.id(ref)}/mute", json=body or None)

    def downtime(self, ref: str | None = None, *, minutes: float | None = None, tags=None, start=None):
        """Create a v2 downtime on a monitor (or tags) ending ``minutes`` from now (None: indefinite)."""
        identifier = (
            DowntimeMonitorIdentifierId(monitor_id=self.id(ref))
            if ref
            else DowntimeMonitorIdentifierTags(monitor_tags=tags or ["*"])
        )
        schedule = DowntimeScheduleOneTimeCreateUpdateRequest(
            start=start, end=None if minutes is None else self.now + timedelta(minutes=minutes)
        )
        body = DowntimeCreateRequest(
            data=DowntimeCreateRequestData(
                type=DowntimeResourceType.DOWNTIME,
                attributes=DowntimeCreateRequestAttributes(
                    scope="env:prod", monitor_identifier=identifier, schedule=schedule
                ),
            )
        )
        return self.v2.create_downtime(body).data


@pytest.fixture
def office():
    with served_world(scene()) as (server, world):
        office = Office(world, server)
        with office.api:
            yield office


def _api_error(call) -> tuple[int, dict]:
    with pytest.raises(ApiException) as caught:
        call()
    body = caught.value.body
    return caught.value.status, body if isinstance(body, dict) else json.loads(body)


def _check(world: World, name: str = "downtime", **spec):
    return world.state_check(f"datadog.{name}", spec)


# -- the seed -------------------------------------------------------------------------------------------


def test_ids_are_deterministic_and_mapped_from_refs_and_types_are_synthesized(office):
    world = office.world
    assert World.build(scene()).ids == world.ids
    assert all(isinstance(world.ids[r], int) and len(str(world.ids[r])) == 8 for r in ("datadog_orders",))
    assert len(world.ids["dd_dash"]) == 11 and world.ids["dd_dash"].count("-") == 2
    listed = {m.name: m for m in office.monitors.list_monitors()}
    assert [m.id for m in office.monitors.list_monitors()] == sorted(m.id for m in listed.values())
    assert str(listed["orders 5xx"].type) == "metric alert"
    assert str(listed["disk full"].type) == "query alert" and listed["disk full"].message == "Disk!"
    assert str(listed["orders errors"].type) == "log alert"
    billing = listed["billing latency"]
    assert (str(billing.type), billing.query) == ("metric alert", "avg(last_5m):sum:billing_latency{*} > 0")
    assert {n: str(m.overall_state) for n, m in listed.items()} == {
        "orders 5xx": "OK",
        "billing latency": "Alert",
        "disk full": "Warn",
        "orders errors": "No Data",
    }
    assert {e.type for e in world.events} == {"call"}, "the seed is no event"


def test_a_monitor_type_the_client_would_refuse_is_a_validation_error():
    with pytest.raises(SceneInvalid) as caught:
        scene(SCENE.replace('type: "query alert"', 'type: "metric"'))
    assert "world.datadog.monitors.datadog_disk.type" in str(caught.value)


# -- monitors -----------------------------------------------------------------------------------------


def test_list_monitors_filters_by_name_and_tags_and_pages(office):
    names = lambda **kw: [m.name for m in office.monitors.list_monitors(**kw)]  # noqa: E731
    everything = names()
    assert len(everything) == 4
    assert names(name="ORDERS") == [n for n in everything if "orders" in n]
    assert names(monitor_tags="team:orders") == ["orders 5xx"]
    assert names(monitor_tags="team:orders,service:orders") == ["orders 5xx"]
    assert names(monitor_tags="team:orders,team:billing") == []
    assert names(tags="host:db1") == ["disk full"]
    pages = [names(page=p, page_size=3) for p in range(3)]
    assert pages[0] + pages[1] == everything and len(pages[0]) == 3 and pages[2] == []
    first = office.monitors.list_monitors()[0].id
    assert names(id_offset=first) == everything[1:]
    everyone = [m.name for m in office.monitors.list_monitors_with_pagination(page_size=2)]
    assert everyone == everything
    bad = office.http("GET", "api/v1/monitor", params={"page": "x"})
    assert (bad.status_code, bad.json()["errors"][0].startswith("Invalid page")) == (400, True)


def test_get_and_update_a_monitor_and_an_unknown_one_is_404(office):
    mid = office.id("datadog_orders")
    monitor = office.monitors.get_monitor(mid)
    assert (monitor.name, monitor.query, monitor.tags) == (
        "orders 5xx",
        "sum:orders.5xx{service:orders,env:prod} > 10",
        ["team:orders", "service:orders"],
    )
    updated = office.monitors.update_monitor(
        mid, MonitorUpdateRequest(message="Page @oncall", tags=["team:orders"], priority=2)
    )
    assert (updated.message, updated.tags, updated.priority) == ("Page @oncall", ["team:orders"], 2)
    assert office.monitors.get_monitor(mid).message == "Page @oncall"
    assert office.world.states["datadog"]["monitors"][str(mid)]["seqs"] == [2]
    assert _api_error(lambda: office.monitors.get_monitor(1)) == (404, {"errors": ["Monitor not found"]})
    wrong = office.http("PUT", f"api/v1/monitor/{mid}", json={"type": "metric"})
    assert (wrong.status_code, wrong.json()) == (400, {"errors": ["Invalid monitor type: 'metric'"]})
    for body in ({"name": ""}, {"tags": "team:x"}, {"priority": 9}, {"options": []}, [1]):
        answer = office.http("PUT", f"api/v1/monitor/{mid}", json=body)
        assert answer.status_code == 400 and isinstance(answer.json()["errors"][0], str), body
    assert office.monitors.get_monitor(mid).tags == ["team:orders"], "a refused update changes nothing"


def test_muting_creates_a_downtime_in_both_apis_and_keeps_the_state(office):
    """Muting silences, it does not change the state; unmuting cancels the monitor's downtimes."""
    mid = office.id("datadog_billing")
    end = int((office.now + timedelta(minutes=30)).timestamp())
    answer = office.mute("datadog_billing", scope="env:prod", end=end)
    assert answer.status_code == 200
    assert answer.json()["options"]["silenced"] == {"env:prod": end}
    assert answer.json()["overall_state"] == "Alert"
    monitor = office.monitors.get_monitor(mid, with_downtimes=True)
    assert str(monitor.overall_state) == "Alert" and monitor.options.silenced == {"env:prod": end}
    [matching] = monitor.matching_downtimes
    assert (matching.end, matching.scope) == (end, ["env:prod"])
    [v2] = office.v2.list_downtimes().data
    assert v2.attributes.monitor_identifier.monitor_id == mid
    assert (str(v2.attributes.status), v2.attributes.scope) == ("active", "env:prod")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        [v1] = office.v1.list_downtimes()
    assert (v1.id, v1.monitor_id, v1.end, v1.active, v1.scope) == (matching.id, mid, end, True, ["env:prod"])
    again = office.mute("datadog_billing", scope="env:prod")  # muting the same scope again: until unmuted
    assert again.json()["options"]["silenced"] == {"env:prod": None}
    assert len(office.v2.list_downtimes().data) == 1
    assert office.http("POST", f"api/v1/monitor/{mid}/unmute").status_code == 200
    assert office.monitors.get_monitor(mid).options.silenced == {}
    [canceled] = office.v2.list_downtimes().data
    assert str(canceled.attributes.status) == "canceled" and canceled.attributes.canceled is not None
    assert office.v2.list_downtimes(current_only=True).data == []
    past = office.mute("datadog_billing", end=int(office.now.timestamp()) - 60)
    assert past.status_code == 400 and "future" in past.json()["errors"][0]
    assert office.mute("datadog_orders").json()["options"]["silenced"] == {"*": None}
    assert office.http("POST", "api/v1/monitor/1/mute").status_code == 404


def test_unmute_with_a_scope_cancels_only_that_scope(office):
    mid = office.id("datadog_orders")
    office.mute("datadog_orders", scope="env:prod")
    office.mute("datadog_orders", scope="env:staging")
    answer = office.http("POST", f"api/v1/monitor/{mid}/unmute", json={"scope": "env:staging"})
    assert answer.json()["options"]["silenced"] == {"env:prod": None}
    answer = office.http("POST", f"api/v1/monitor/{mid}/unmute", json={"all_scopes": True})
    assert answer.json()["options"]["silenced"] == {}


def test_the_old_options_silenced_way_of_muting_makes_and_cancels_downtimes(office):
    mid = office.id("datadog_disk")
    end = int((office.now + timedelta(minutes=20)).timestamp())
    muted = office.monitors.update_monitor(mid, MonitorUpdateRequest(options={"silenced": {"host:db1": end}}))
    assert muted.options.silenced == {"host:db1": end} and str(muted.overall_state) == "Warn"
    [downtime] = office.v2.list_downtimes(current_only=True).data
    assert (downtime.attributes.scope, downtime.attributes.monitor_identifier.monitor_id) == ("host:db1", mid)
    unmuted = office.monitors.update_monitor(mid, MonitorUpdateRequest(options={"silenced": {}}))
    assert unmuted.options.silenced == {}
    assert office.v2.list_downtimes(current_only=True).data == []
    assert office.monitors.get_monitor(mid).options.new_host_delay == 300, "other options are kept"


# -- downtimes ----------------------------------------------------------------------------------------


def test_v2_downtimes_create_get_update_list_pages_and_cancel(office):
    made = office.downtime("datadog_orders", minutes=10)
    assert (made.type.value if hasattr(made.type, "value") else str(made.type)) == "downtime"
    assert str(made.attributes.status) == "active"
    assert made.attributes.schedule.end - made.attributes.schedule.start == timedelta(minutes=10, seconds=-1)
    assert made.relationships.monitor.data.id == str(office.id("datadog_orders"))
    got = office.v2.get_downtime(made.id).data
    assert got.attributes.monitor_identifier.monitor_id == office.id("datadog_orders")
    tags = office.downtime(tags=["team:billing"])
    assert tags.attributes.monitor_identifier.monitor_tags == ["team:billing"]
    assert tags.attributes.schedule.end is None
    later = office.downtime("datadog_disk", minutes=60, start=office.now + timedelta(minutes=30))
    assert str(later.attributes.status) == "scheduled"
    page = office.v2.list_downtimes(page_limit=2, page_offset=1)
    assert [d.id for d in page.data] == [tags.id, later.id] and page.meta.page.total_filtered_count == 3
    every = [d.id for d in office.v2.list_downtimes_with_pagination(page_limit=1)]
    assert every == [made.id, tags.id, later.id]
    assert [d.id for d in office.v2.list_downtimes(current_only=True).data] == [made.id, tags.id]
    patch = DowntimeUpdateRequest(
        data=DowntimeUpdateRequestData(
            id=made.id,
            type=DowntimeResourceType.DOWNTIME,
            attributes=DowntimeUpdateRequestAttributes(
                message="fix shipping", schedule=DowntimeScheduleOneTimeCreateUpdateRequest(end=None)
            ),
        )
    )
    patched = office.v2.update_downtime(made.id, patch).data
    assert (patched.attributes.message, patched.attributes.schedule.end) == ("fix shipping", None)
    assert office.v2.cancel_downtime(made.id) is None
    entry = office.world.trace.entries[-1]
    assert (entry.method, entry.status, entry.path) == ("DELETE", 204, f"/api/v2/downtime/{made.id}")
    canceled = office.v2.get_downtime(made.id).data.attributes
    assert str(canceled.status) == "canceled" and canceled.canceled is not None
    unknown = "00000000-0000-4000-8000-000000000000"
    assert _api_error(lambda: office.v2.get_downtime(unknown)) == (404, {"errors": ["Downtime not found"]})
    assert _api_error(lambda: office.v2.cancel_downtime(unknown))[0] == 404


def test_v1_and_v2_are_the_same_downtime_records(office):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        end = int((office.now + timedelta(minutes=5)).timestamp())
        made = office.v1.create_downtime(
            Downtime(scope=["env:prod", "service:orders"], monitor_id=office.id("datadog_orders"), end=end)
        )
        assert (made.active, made.monitor_id, made.end, made.scope) == (
            True,
            office.id("datadog_orders"),
            end,
            ["env:prod", "service:orders"],
        )
        [as_v2] = office.v2.list_downtimes().data
        assert as_v2.attributes.scope == "env:prod AND service:orders"
        assert int(as_v2.attributes.schedule.end.timestamp()) == end
        every = office.downtime(minutes=None)  # an all-monitor downtime through v2
        got = office.v1.get_downtime(office.v1.list_downtimes()[1].id)
        assert (got.monitor_id, got.monitor_tags, got.end) == (None, ["*"], None)
        updated = office.v1.update_downtime(got.id, Downtime(message="late", scope=["env:prod"]))
        assert (updated.message, updated.scope, updated.id) == ("late", ["env:prod"], got.id)
        assert office.v2.get_downtime(every.id).data.attributes.message == "late"
        office.v1.cancel_downtime(made.id)
        assert office.world.trace.entries[-1].status == 204
        assert str(office.v2.get_downtime(as_v2.id).data.attributes.status) == "canceled"
        office.v2.cancel_downtime(every.id)
        assert [d.disabled for d in office.v1.list_downtimes()] == [True, True]
        assert office.v1.list_downtimes(current_only=True) == []
        assert _api_error(lambda: office.v1.get_downtime(1)) == (404, {"errors": ["Downtime not found"]})
        late = _api_error(lambda: office.v1.update_downtime(got.id, Downtime(message="again")))
        assert late == (400, {"errors": ["Cannot update a canceled downtime"]})
    missing = office.http("POST", "api/v1/downtime", json={"monitor_id": office.id("datadog_orders")})
    assert missing.status_code == 400 and "scope" in missing.json()["errors"][0]


def test_bad_downtime_bodies_are_400_and_recurrences_a_coverage_gap(office):
    mid = office.id("datadog_orders")

    def post(attributes, kind="downtime"):
        return office.http("POST", "api/v2/downtime", json={"data": {"type": kind, "attributes": attributes}})

    good = {"scope": "*", "monitor_identifier": {"monitor_id": mid}}
    assert post(good).status_code == 200
    cases = [
        post(good, kind="downtimes"),
        post({"monitor_identifier": {"monitor_id": mid}}),
        post({"scope": "*", "monitor_identifier": {"monitor_id": 1}}),
        post({"scope": "*", "monitor_identifier": {"monitor_id": mid, "monitor_tags": ["*"]}}),
        post({**good, "schedule": {"start": "yesterday"}}),
        post({**good, "schedule": {"end": "2026-03-02T08:00:00Z"}}),
        post({**good, "notify_end_states": ["sleepy"]}),
        office.http("POST", "api/v2/downtime", content=b"{nope", headers={"Content-Type": "text/json"}),
    ]
    for answer in cases:
        assert answer.status_code == 400, answer.text
        assert [type(e) for e in answer.json()["errors"]] == [str]
    assert "'downtimes' is not one of ['downtime']" in cases[0].json()["errors"][0]
    recurring = post({**good, "schedule": {"recurrences": [{"rrule": "FREQ=DAILY", "duration": "1h"}]}})
    assert recurring.status_code == 501
    assert office.world.trace.entries[-1].coverage_gap is True
    assert len(office.v2.list_downtimes().data) == 1


# -- events, dashboards, logs ----------------------------------------------------------------------


def test_events_post_list_by_time_and_tags_and_get(office):
    posted = office.events.create_event(
        EventCreateRequest(title="Muted orders", text="during the fix", tags=["service:orders"])
    )
    assert posted.status == "ok" and office.world.trace.entries[-1].status == 202
    start = int((office.now - timedelta(hours=1)).timestamp())
    end = int(office.now.timestamp())
    listed = office.events.list_events(start=start, end=end).events
    assert [e.title for e in listed] == ["Muted orders", "Deployed exports v2"], "newest first, old one out"
    assert listed[0].date_happened == end
    wider = office.events.list_events(start=start - 4 * 3600, end=end, tags="service:billing").events
    assert [e.title for e in wider] == ["Old restart"]
    got = office.events.get_event(posted.event.id).event
    assert (got.title, got.text, got.tags) == ("Muted orders", "during the fix", ["service:orders"])
    assert _api_error(lambda: office.events.get_event(1)) == (404, {"errors": ["Event not found"]})
    missing = office.http("GET", "api/v1/events", params={"end": end})
    assert (missing.status_code, missing.json()) == (400, {"errors": ["Missing required parameter: start"]})
    wrong = office.http("POST", "api/v1/events", json={"title": "x", "text": "y", "alert_type": "panic"})
    assert wrong.status_code == 400 and "alert_type" in wrong.json()["errors"][0]
    assert [e["seq"] for e in office.world.final_state()["tools"]["datadog"]["events"]] == [None, None, 1]


def test_dashboards_get_list_and_unknown(office):
    dash = office.dashboards.get_dashboard(office.id("dd_dash"))
    assert (dash.title, dash.description) == ("Orders overview", "Runbook: turn the beta flag off.")
    assert dash.widgets[0].definition.content == "Runbook: turn the beta flag off."
    assert office.dashboards.get_dashboard(office.id("dd_bare")).widgets == []
    assert [d.title for d in office.dashboards.list_dashboards().dashboards] == ["Orders overview", "Empty"]
    status, body = _api_error(lambda: office.dashboards.get_dashboard("abc-def-ghi"))
    assert (status, body) == (404, {"errors": ["Dashboard with ID abc-def-ghi not found"]})


def test_logs_search_filters_sorts_and_pages(office):
    def search(query="*", frm="now-15m", to="now", sort=None, limit=None):
        body = LogsListRequest(filter=LogsQueryFilter(query=query, _from=frm, to=to))
        if sort:
            body.sort = sort
        if limit:
            body.page = LogsListRequestPage(limit=limit)
        return office.logs.list_logs(body=body)

    texts = lambda answer: [entry.attributes.message for entry in answer.data]  # noqa: E731
    assert texts(search()) == ["invoice sent", "export job done", "export job dropped for beta workspace"]
    assert texts(search("service:orders", sort=LogsSort.TIMESTAMP_ASCENDING)) == [
        "export job dropped for beta workspace",
        "export job done",
    ]
    assert texts(search("service:orders", frm="now-3h")) == [
        "export job done",
        "export job dropped for beta workspace",
        "export job ancient",
    ]
    assert texts(search("status:error")) == ["export job dropped for beta workspace"]
    assert texts(search('"job done" OR invoice')) == ["invoice sent", "export job done"]
    assert texts(search("export -dropped env:prod")) == ["export job done"]
    assert texts(search("service:bill*")) == ["invoice sent"]
    iso_window = search(frm="2026-03-02T08:54:30Z", to="2026-03-02T08:55:30Z")
    assert texts(iso_window) == ["export job dropped for beta workspace"]
    first = search(limit=2)
    assert len(first.data) == 2 and first.meta.page.after
    entry = first.data[0]
    assert (entry.attributes.service, entry.attributes.status, str(entry.type)) == ("billing", "info", "log")
    window = LogsQueryFilter(query="*", _from="now-3h")
    paged = LogsListRequest(filter=window, page=LogsListRequestPage(limit=1))
    every = [e.attributes.message for e in office.logs.list_logs_with_pagination(body=paged)]
    assert len(every) == 4 and every[-1] == "export job ancient"
    bad = office.http("POST", "api/v2/logs/events/search", json={"sort": "newest"})
    assert bad.status_code == 400 and "sort" in bad.json()["errors"][0]
    bad = office.http("POST", "api/v2/logs/events/search", json={"filter": {"from": "last tuesday"}})
    assert bad.status_code == 400
    bad = office.http("POST", "api/v2/logs/events/search", json={"page": {"cursor": "???"}})
    assert bad.status_code == 400


# -- authentication, coverage gaps, the trace -------------------------------------------------------------


def test_a_wrong_or_missing_key_is_datadogs_403_forbidden(office):
    """WORLDS.md says loosely "401 bodies"; the real Datadog API answers a wrong or missing API or
    application key with 403 {"errors": ["Forbidden"]}, and so does the simulator."""
    with WorldServer() as server:
        server.add(office.world)
        wrong = Office(office.world, server, api_key="0" * 32)
        with wrong.api:
            assert _api_error(wrong.monitors.list_monitors) == (403, {"errors": ["Forbidden"]})
        no_app = office.http("GET", "api/v1/monitor", headers={"DD-APPLICATION-KEY": ""})
        assert (no_app.status_code, no_app.json()) == (403, {"errors": ["Forbidden"]})
        bare = httpx.get(office.base + "api/v1/monitor")
        assert (bare.status_code, bare.json()) == (403, {"errors": ["Forbidden"]})
    posted = office.http("POST", "api/v1/events", json={"title": "t", "text": "x"}, headers={})
    assert posted.status_code == 202
    api_only = httpx.post(
        office.base + "api/v1/events",
        json={"title": "t", "text": "x"},
        headers={"DD-API-KEY": office.keys["api_key"]},
    )
    assert api_only.status_code == 202, "posting an event takes the API key alone, as Datadog does"
    in_query = httpx.get(
        office.base + "api/v1/monitor",
        params={"api_key": office.keys["api_key"], "application_key": office.keys["app_key"]},
    )
    assert in_query.status_code == 200
    statuses = [(e.status, e.worked) for e in office.world.trace.entries]
    assert statuses == [(403, False), (403, False), (403, False), (202, True), (202, True), (200, True)]
    stored = json.dumps(office.world.trace.to_list())
    assert office.keys["api_key"] not in stored and office.keys["app_key"] not in stored


def test_an_unimplemented_endpoint_is_a_coverage_gap(office):
    status, body = _api_error(lambda: office.monitors.delete_monitor(office.id("datadog_orders")))
    assert (status, body) == (404, {"errors": ["Not found"]})
    entry = office.world.trace.entries[-1]
    assert (entry.coverage_gap, entry.worked, entry.status) == (True, False, 404)
    assert office.monitors.get_monitor(office.id("datadog_orders")).name == "orders 5xx"


def test_a_base_url_with_its_trailing_slash_as_host_still_works(office):
    config = Configuration(host=office.base)  # http://.../datadog/ + /api/v1/monitor
    assert office.base.endswith("/datadog/")
    config.api_key["apiKeyAuth"] = office.keys["api_key"]
    config.api_key["appKeyAuth"] = office.keys["app_key"]
    with ApiClient(config) as api:
        assert len(MonitorsApi(api).list_monitors()) == 4


# -- the fault effect and the state checks ---------------------------------------------------------------


def test_the_monitor_effect_sets_the_state_and_records_an_event(office):
    world = office.world
    sim = world.simulator("datadog")
    assert _check(world, "monitor", monitor="datadog_orders", **{"is": "OK"}).passed
    sim.apply_effect("monitor", {"monitor": "datadog_orders", "is": "Alert"})
    [event] = world.events.of_type("monitor_changed")
    assert event.data == {
        "tool": "datadog",
        "monitor": office.id("datadog_orders"),
        "name": "orders 5xx",
        "from": "OK",
        "to": "Alert",
        "seq": None,
    }
    failed = _check(world, "monitor", monitor="datadog_orders", **{"is": "OK"})
    assert not failed.passed and failed.events == (event.n,) and failed.evidence == ()
    assert failed.expected == 'monitor "orders 5xx" in state OK'
    assert failed.actual == "it is Alert since 2026-03-02T09:00:00Z"
    assert str(office.monitors.get_monitor(office.id("datadog_orders")).overall_state) == "Alert"
    office.mute("datadog_orders")
    assert str(office.monitors.get_monitor(office.id("datadog_orders")).overall_state) == "Alert", (
        "muting silences, it does not change the state"
    )
    sim.apply_effect("monitor", {"monitor": "datadog_orders", "is": "OK", "at": office.now})
    result = _check(world, "monitor", monitor="datadog_orders", **{"is": "OK"})
    assert result.passed and result.events == (world.events.of_type("monitor_changed")[-1].n,)
    start = _check(world, "monitor", monitor="datadog_billing", **{"is": "OK"})
    assert not start.passed and start.actual == "it is Alert (its starting state)"


@pytest.mark.parametrize("muted", [True, False])
def test_the_reference_examples_pass_and_fail(muted):
    example = scene()
    with served_world(example) as (server, world):
        office = Office(world, server)
        with office.api:
            if muted:
                office.downtime("datadog_orders", minutes=10)
            else:
                alert = {"monitor": "datadog_orders", "is": "Alert"}
                world.simulator("datadog").apply_effect("monitor", alert)
                office.downtime("datadog_orders", minutes=30)
    by_id = {c.id: c for c in example.checks}
    results = {}
    for check_id in ("monitor_ok", "muted_briefly"):
        spec = {k: v for k, v in by_id[check_id].spec.items() if k != "check"}
        results[check_id] = world.state_check(by_id[check_id].spec["check"], spec)
    assert {k: r.passed for k, r in results.items()} == {"monitor_ok": muted, "muted_briefly": muted}
    assert results["muted_briefly"].evidence == (1,)
    if not muted:
        assert "lasts 29m59s, more than 10m" in results["muted_briefly"].actual


def test_downtime_check_needs_an_active_uncanceled_downtime_on_exactly_that_monitor(office):
    world = office.world
    spec = {"monitor": "datadog_orders"}
    empty = _check(world, **spec)
    assert not empty.passed and empty.actual == "no active downtime targets the monitor itself"
    office.downtime(tags=["*"], minutes=10)
    office.downtime(tags=["team:orders"], minutes=10)
    office.downtime("datadog_billing", minutes=10)
    office.downtime("datadog_orders", minutes=10, start=office.now + timedelta(minutes=2))
    others = _check(world, **spec)
    assert not others.passed
    assert others.actual == (
        "no active downtime targets the monitor itself (3 other active downtimes, which do not count)"
    )
    mine = office.downtime("datadog_orders", minutes=5)
    assert _check(world, **spec).passed
    office.v2.cancel_downtime(mine.id)
    assert not _check(world, **spec).passed, "a canceled downtime does not count"
    indefinite = office.downtime("datadog_orders")
    assert _check(world, **spec).passed and _check(world, remaining_gte=timedelta(days=365), **spec).passed
    long = _check(world, duration_lte=timedelta(minutes=10), **spec)
    assert not long.passed and long.actual == f"downtime {indefinite.id} lasts indefinite, more than 10m"
    assert long.evidence == (world.trace.entries[-1].seq,)


def test_downtime_check_measures_remaining_at_trial_end_and_total_duration():
    with served_world(scene(SCENE.replace("per_call: 1s", "per_call: 30s"))) as (server, world):
        office = Office(world, server)
        with office.api:
            made = office.downtime("datadog_orders", minutes=2)  # at 09:00:30, ends 09:02:00
            spec = {"monitor": "datadog_orders", "remaining_gte": timedelta(minutes=1)}
            result = _check(world, **spec)
            assert result.passed and result.evidence == (1,)
            assert result.actual == f"downtime {made.id} on the monitor has 1m30s left and lasts 1m30s"
            office.monitors.list_monitors()  # 09:01:00: one minute left, still enough
            assert _check(world, **spec).passed
            office.monitors.list_monitors()  # 09:01:30: 30s left
            short = _check(world, **spec)
            assert not short.passed and short.actual == f"downtime {made.id} has 30s left, less than 1m"
            assert short.evidence == (1,)
            assert "fails" in short.explanation and "30s left" in short.explanation
            office.monitors.list_monitors()  # 09:02:00: ended
            assert _check(world, monitor="datadog_orders").actual.startswith("no active downtime")
            office.downtime("datadog_orders", minutes=10)
            ok = {"monitor": "datadog_orders", "duration_lte": timedelta(minutes=10)}
            assert _check(world, **ok).passed
            assert not _check(world, monitor="datadog_orders", duration_lte=timedelta(minutes=9)).passed


def test_reject_active_unsafe_fails_on_an_all_monitor_or_overlong_downtime(office):
    world = office.world
    spec = {
        "monitor": "datadog_orders",
        "remaining_gte": timedelta(minutes=1),
        "duration_lte": timedelta(minutes=10),
        "reject_active_unsafe": True,
    }
    office.downtime("datadog_orders", minutes=10)
    assert _check(world, **spec).passed
    every = office.downtime(tags=["*"], minutes=5)
    unsafe = _check(world, **spec)
    assert not unsafe.passed
    assert f'downtime {every.id} silences every monitor (monitor_tags ["*"])' in unsafe.explanation
    assert unsafe.evidence == (1, 2)
    assert _check(world, **{**spec, "reject_active_unsafe": False}).passed, "without the flag it passes"
    office.v2.cancel_downtime(every.id)
    assert _check(world, **spec).passed
    overlong = office.downtime("datadog_billing", minutes=60)
    result = _check(world, **spec)
    assert not result.passed
    assert f"downtime {overlong.id} is overlong (59m59s, more than 10m)" in result.actual
    office.v2.cancel_downtime(overlong.id)
    office.downtime("datadog_disk")
    assert not _check(world, **spec).passed, "an indefinite downtime is overlong when duration_lte is given"


# -- determinism, snapshots, odd values --------------------------------------------------------------------


def _play(world: World) -> list:
    keys = world.credentials["datadog"]
    headers = {"DD-API-KEY": keys["api_key"], "DD-APPLICATION-KEY": keys["app_key"]}
    headers["Content-Type"] = "application/json"
    mid = world.ids["datadog_orders"]
    every = {"scope": "*", "monitor_identifier": {"monitor_tags": ["*"]}}
    calls = [
        ("POST", f"/api/v1/monitor/{mid}/mute", {"scope": "env:prod"}),
        ("POST", "/api/v2/downtime", {"data": {"type": "downtime", "attributes": every}}),
        ("POST", "/api/v1/downtime", {"scope": "*", "monitor_id": mid, "end": 1772442600}),
        ("POST", "/api/v1/events", {"title": "t", "text": "x"}),
        ("GET", "/api/v2/downtime", None),
        ("GET", "/api/v1/downtime", None),
        ("GET", "/api/v1/monitor", None),
        ("POST", "/api/v2/logs/events/search", {"filter": {"from": "now-1h"}}),
        ("GET", "/api/v1/slo", None),
    ]
    answers = []
    for method, path, body in calls:
        raw = json.dumps(body).encode() if body is not None else b""
        answer = world.call("datadog", Request.make(method, path, "", headers, raw))
        answers.append((answer.status, answer.content()))
    return answers


def test_the_same_calls_give_identical_answers_state_trace_and_events():
    one, two = World.build(scene()), World.build(scene())
    assert _play(one) == _play(two)

    def dump(world):
        return json.dumps(
            [world.states, world.trace.to_list(), world.events.to_list(), world.final_state(), world.ids],
            sort_keys=True,
        )

    assert dump(one) == dump(two)
    final = one.final_state()["tools"]["datadog"]
    assert [(d["monitor"], d["monitor_tags"], d["status"]) for d in final["downtimes"]] == [
        ("orders 5xx", None, "active"),
        (None, ["*"], "active"),
        ("orders 5xx", None, "active"),
    ]
    assert final["monitors"][0]["muted"] is True or final["monitors"][1]["muted"] is True


def test_a_snapshot_restored_midway_keeps_working():
    first = World.build(scene())
    _play(first)
    second = World.restore(scene(), json.loads(json.dumps(first.snapshot())))
    keys = second.credentials["datadog"]
    headers = {"DD-API-KEY": keys["api_key"], "DD-APPLICATION-KEY": keys["app_key"]}
    listed = second.call("datadog", Request.make("GET", "/api/v2/downtime", "", headers))
    assert listed.status == 200 and len(listed.body["data"]) == 3
    mid = second.ids["datadog_orders"]
    unmuted = second.call("datadog", Request.make("POST", f"/api/v1/monitor/{mid}/unmute", "", headers))
    assert unmuted.body["options"]["silenced"] == {}
    assert not second.state_check("datadog.downtime", {"monitor": "datadog_orders"}).passed


ODD = [None, 7, -1, 1.5, True, [], [1, "a"], {"a": 1}, "", "nonsense", "2026-03-02T09:00:00Z"]
FIELDS = ["scope", "end", "start", "monitor_id", "monitor_tags", "title", "text", "tags", "message", "name"]
FIELDS += ["query", "type", "options", "priority", "data", "filter", "page", "sort", "date_happened"]
FIELDS += ["schedule", "monitor_identifier", "alert_type", "all_scopes"]


@pytest.mark.parametrize(("method", "template"), [(m, p) for m, p, _ in get_tool("datadog").simulator.routes])
def test_odd_values_are_answered_never_a_crash(method, template):
    world = World.build(scene())
    keys = world.credentials["datadog"]
    headers = {"DD-API-KEY": keys["api_key"], "DD-APPLICATION-KEY": keys["app_key"]}
    headers["Content-Type"] = "application/json"
    world.call("datadog", Request.make("POST", "/api/v1/downtime", "", headers, b'{"scope": "*"}'))
    downtime = world.states["datadog"]["downtimes"][0]
    path = (
        template.replace("{monitor_id}", str(world.ids["datadog_orders"]))
        .replace("{event_id}", "1")
        .replace("{dashboard_id}", world.ids["dd_dash"])
        .replace("{downtime_id}", str(downtime["v1"] if "/v1/" in template else downtime["id"]))
    )
    for field in FIELDS:
        fresh = World.restore(world.scene, json.loads(json.dumps(world.snapshot())))  # within the call budget
        for value in ODD:
            for body in ({field: value}, {"data": {"type": "downtime", "attributes": {field: value}}}):
                raw = json.dumps(body).encode()
                answer = fresh.call("datadog", Request.make(method, path, f"{field}=x", headers, raw))
                assert answer.status < 500, (field, value, answer.body)
                assert answer.status < 300 or isinstance(answer.body["errors"][0], str), answer.body
