"""Pages: task list and conversation view, selection -> one-off evaluation -> grid, monitor dashboards."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from checks.services import edit_check
from monitors import services as monitoring
from monitors.models import Evaluation, Monitor, Task
from tests.monitors.conftest import task_item
from tests.monitors.test_api import expected_grid, grid_checks, grid_items

SUPPORT_BOT = '<span class="trunc" title="Support bot">Support bot</span>'  # as pages show it (|trunc)
XSS_SCRIPT = "<script>alert('pwned')</script>"
XSS_IMG = '<img src=x onerror="alert(1)">'


class _ActiveContent(HTMLParser):
    """Finds what a browser would run: <img>/<script> elements with inline code, on* attributes."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.found.append("img element")
        self.found.extend(
            f"{tag}[{name}]"
            for name, _ in attrs
            if name.startswith("on") and "pwned" in (_ or "") or name == "onerror"
        )
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and "pwned" in data:
            self.found.append("inline script with the payload")


def active_content(html: str) -> list[str]:
    parser = _ActiveContent()
    parser.feed(html)
    return parser.found


def ingest(agent, by, items, capture):
    with capture(execute=True):
        return monitoring.ingest_tasks(agent=agent, by=by, items=items)


def test_task_list_filters_and_htmx_fragment(client, member, agent, django_capture_on_commit_callbacks):
    ingest(agent, member, [task_item(i) for i in range(8)], django_capture_on_commit_callbacks)
    client.force_login(member)
    page = client.get(reverse("monitors:task-list"))
    assert page.status_code == 200
    assert "8</strong> matching tasks" in page.content.decode()
    assert 'for="id_q"' in page.content.decode()  # labelled filter fields
    filtered = client.get(reverse("monitors:task-list"), {"q": "c3", "agent": agent.pk})
    html = filtered.content.decode()
    assert "1</strong> matching task." in html and "conv-3" in html and "conv-4" not in html
    fragment = client.get(reverse("monitors:task-list"), {"q": "c3"}, headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert body.lstrip().startswith('<div id="task-results">') and "<html" not in body


def _task_list_in_7_queries(client, member, agent, n, assert_num_queries, capture, params):
    """The task list (with `params`) over `n` tasks, asserting its query count; the response."""
    ingest(agent, member, [task_item(i) for i in range(n)], capture)
    client.force_login(member)
    # session, user, the user's teams (current team and switcher), agents (filter choices), role, count,
    # page of tasks
    with assert_num_queries(7):
        response = client.get(reverse("monitors:task-list"), params)
    assert response.status_code == 200
    return response


@pytest.mark.parametrize("n", [1, 60])
def test_task_list_queries_do_not_grow(
    client, member, agent, n, django_assert_num_queries, django_capture_on_commit_callbacks
):
    _task_list_in_7_queries(
        client,
        member,
        agent,
        n,
        django_assert_num_queries,
        django_capture_on_commit_callbacks,
        {"has_failures": "no"},
    )


def test_transcript_payloads_render_inert(client, member, agent, checks, django_capture_on_commit_callbacks):
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="All", checks=[checks[1].pk], sample_rate=100
    )
    item = task_item(1, output=XSS_IMG, tool_calls=[{"name": XSS_SCRIPT, "status": "succeeded"}])
    item["external_id"] = "evil-" + XSS_IMG
    item["messages"] = [{"role": "user", "content": XSS_SCRIPT}, {"role": "assistant", "content": XSS_IMG}]
    item["metadata"] = {"note": XSS_SCRIPT}
    result = ingest(agent, member, [item], django_capture_on_commit_callbacks)
    task = Task.objects.get(pk=result.ids[0])
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = monitoring.launch_evaluation(
            agent=agent, by=member, check_ids=[checks[1].pk], task_ids=result.ids
        )
    client.force_login(member)
    pages = [
        reverse("monitors:task-detail", args=[task.pk]),
        reverse("monitors:task-list"),
        reverse("monitors:monitor-detail", args=[monitor.pk]) + "?bucket=day&days=90",
        reverse("monitors:evaluation-detail", args=[evaluation.pk]),
    ]
    for url in pages:
        html = client.get(url).content.decode()
        assert XSS_SCRIPT not in html, url
        assert active_content(html) == [], url
        assert "&lt;img src=x onerror=" in html or "&lt;script&gt;" in html, url
    detail = client.get(pages[0]).content.decode()
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in detail


def test_select_tasks_choose_checks_launch_grid(
    client, member, agent, make_check, django_capture_on_commit_callbacks
):
    checks = grid_checks(make_check)
    result = ingest(agent, member, grid_items(), django_capture_on_commit_callbacks)
    client.force_login(member)
    # Tick the 50 tasks on the list, continue to the check picker.
    picker = client.get(reverse("monitors:evaluation-create"), {"task": [str(i) for i in result.ids]})
    html = picker.content.decode()
    assert picker.status_code == 200
    assert 'Evaluate 50 tasks of <span class="trunc" title="Support bot">Support bot</span>' in html
    assert all(f'value="{c.pk}"' in html for c in checks)
    form = {"task": [str(i) for i in result.ids], "checks": [str(c.pk) for c in checks], "name": "Grid"}
    with django_capture_on_commit_callbacks(execute=True):
        launched = client.post(reverse("monitors:evaluation-create"), form)
    evaluation = Evaluation.objects.get()
    assert launched.status_code == 302 and launched.url == evaluation.get_absolute_url()
    page = client.get(launched.url, {"page": 1})
    html = page.content.decode()
    assert page.status_code == 200 and "150 of 150 results recorded" in html
    # Read the grid back from the HTML: one row per task, one badge per check, in column order.
    rows = re.findall(r'<tr><th scope="row"><a href="[^"]+">(conv-\d+)</a></th>(.*?)</tr>', html, re.S)
    assert len(rows) == 50
    for external_id, cells in rows:
        outcomes = tuple(re.findall(r'class="badge (\w+)"', cells))
        assert outcomes == expected_grid(int(external_id.split("-")[1])), external_id
    assert 'hx-trigger="every 2s"' not in html  # finished: no polling


def test_select_all_matching_launches_over_the_filter(
    client, member, agent, checks, django_capture_on_commit_callbacks
):
    ingest(agent, member, [task_item(i) for i in range(20)], django_capture_on_commit_callbacks)
    client.force_login(member)
    params = {"all": "1", "agent": str(agent.pk), "q": '"pro"'}
    picker = client.get(reverse("monitors:evaluation-create"), params)
    assert "Evaluate 10 tasks" in picker.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("monitors:evaluation-create"), {**params, "checks": [str(checks[0].pk)]})
    evaluation = Evaluation.objects.get()
    assert evaluation.tasks.count() == 10 and evaluation.results.count() == 10


def test_evaluation_page_polls_while_running(
    client, member, agent, checks, django_capture_on_commit_callbacks
):
    result = ingest(agent, member, [task_item(i) for i in range(3)], django_capture_on_commit_callbacks)
    evaluation = monitoring.launch_evaluation(
        agent=agent, by=member, check_ids=[checks[0].pk], task_ids=result.ids
    )
    # (on_commit never ran: the evaluation stays queued, as if the worker had not picked it up yet)
    client.force_login(member)
    url = reverse("monitors:evaluation-detail", args=[evaluation.pk])
    assert 'hx-trigger="every 2s"' in client.get(url).content.decode()
    monitoring.run_evaluation(evaluation_id=evaluation.pk)
    done = client.get(url, {"poll": "1"}, headers={"HX-Request": "true"})
    assert done.status_code == 286 and "3 of 3 results recorded" in done.content.decode()


def test_viewer_cannot_launch_and_outsider_sees_nothing(
    client, member, viewer, outsider, agent, checks, django_capture_on_commit_callbacks
):
    result = ingest(agent, member, [task_item(1)], django_capture_on_commit_callbacks)
    monitor = monitoring.create_monitor(agent=agent, by=member, name="M", checks=[checks[0].pk])
    client.force_login(viewer)
    response = client.post(
        reverse("monitors:evaluation-create"), {"task": str(result.ids[0]), "checks": str(checks[0].pk)}
    )
    assert response.status_code == 403 and not Evaluation.objects.exists()
    assert client.get(reverse("monitors:monitor-create")).status_code == 403
    assert client.get(reverse("monitors:monitor-detail", args=[monitor.pk])).status_code == 200
    client.force_login(outsider)
    assert client.get(reverse("monitors:task-detail", args=[result.ids[0]])).status_code == 404
    assert client.get(reverse("monitors:monitor-detail", args=[monitor.pk])).status_code == 404
    assert client.post(reverse("monitors:monitor-delete", args=[monitor.pk])).status_code == 404
    assert "conv-1" not in client.get(reverse("monitors:task-list")).content.decode()


def test_monitor_create_edit_delete_pages(client, member, admin_user, agent, checks):
    client.force_login(member)
    form = client.get(reverse("monitors:monitor-create"), {"agent": agent.pk})
    html = form.content.decode()
    assert 'for="id_name"' in html and 'for="id_sample_rate"' in html and 'for="id_checks_0"' in html
    bad = client.post(
        reverse("monitors:monitor-create"), {"agent": agent.pk, "name": "x", "sample_rate": "120"}
    )
    assert bad.status_code == 200 and "errorlist" in bad.content.decode()
    created = client.post(
        reverse("monitors:monitor-create"),
        {
            "agent": agent.pk,
            "name": "Live traffic",
            "sample_rate": "12.5",
            "checks": [checks[0].pk],
            "active": "on",
        },
    )
    monitor = Monitor.objects.get()
    assert created.status_code == 302 and created.url == monitor.get_absolute_url()
    assert monitor.sample_rate == 12.5 and list(monitor.checks.all()) == [checks[0]]
    client.post(
        reverse("monitors:monitor-edit", args=[monitor.pk]),
        {
            "name": "Renamed",
            "sample_rate": "5",
            "checks": [c.pk for c in checks],
        },
    )
    monitor.refresh_from_db()
    assert (monitor.name, monitor.active, monitor.checks.count()) == ("Renamed", False, 2)
    assert client.post(reverse("monitors:monitor-delete", args=[monitor.pk])).status_code == 403
    client.force_login(admin_user)
    assert client.post(reverse("monitors:monitor-delete", args=[monitor.pk])).status_code == 302
    assert not Monitor.objects.exists()


@pytest.mark.parametrize("n", [1, 20])
def test_monitor_list_queries_do_not_grow(client, member, agent, checks, n, django_assert_num_queries):
    for i in range(n):
        monitoring.create_monitor(agent=agent, by=member, name=f"m{i}", checks=[c.pk for c in checks])
    client.force_login(member)
    # session, user, the user's teams (current team and switcher), agents, role, count, page, checks
    # (one query of name and version pairs)
    with django_assert_num_queries(8):
        response = client.get(reverse("monitors:monitor-list"))
    assert response.content.decode().count('href="/monitors/') >= n


@pytest.mark.parametrize("n", [1, 12])
def test_evaluation_list_queries_do_not_grow(
    client, member, agent, checks, n, django_assert_num_queries, django_capture_on_commit_callbacks
):
    result = ingest(agent, member, [task_item(i) for i in range(3)], django_capture_on_commit_callbacks)
    for _ in range(n):
        monitoring.launch_evaluation(agent=agent, by=member, check_ids=[checks[0].pk], task_ids=result.ids)
    client.force_login(member)
    # session, user, the user's teams (current team and switcher), count, page (with task counts)
    with django_assert_num_queries(5):
        assert client.get(reverse("monitors:evaluation-list")).status_code == 200


def test_monitor_page_labels_both_versions_of_an_edited_check(
    client, member, agent, make_check, django_capture_on_commit_callbacks
):
    check = make_check("Mentions answer", text="answer")
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Live", checks=[check.pk], sample_rate=100
    )
    now = datetime.now(UTC)
    ingest(
        agent,
        member,
        [task_item(i, when=now - timedelta(hours=5)) for i in range(3)],
        django_capture_on_commit_callbacks,
    )
    edit_check(check=check, by=member, config={"text": "question"})
    ingest(
        agent,
        member,
        [task_item(i, output="nope", when=now - timedelta(hours=1)) for i in range(3, 5)],
        django_capture_on_commit_callbacks,
    )
    client.force_login(member)
    html = client.get(reverse("monitors:monitor-detail", args=[monitor.pk])).content.decode()
    name = '<span class="trunc" title="Mentions answer">Mentions answer</span>'  # the |trunc filter
    assert f'{name} <span class="tag">v1</span> <span class="tag warn">earlier version</span>' in html
    assert f'{name} <span class="tag">v2</span> <span class="tag">current</span>' in html
    assert '"label": "Mentions answer v1"' in html and '"label": "Mentions answer v2"' in html  # chart data
    assert "uPlot.iife.min.js" in html
    day = client.get(
        reverse("monitors:monitor-detail", args=[monitor.pk]),
        {"bucket": "day"},
        headers={"HX-Request": "true"},
    )
    assert day.content.decode().lstrip().startswith('<div id="dashboard">')


def _build_monitor_data(agent, monitor, versions, n_tasks: int, now: datetime) -> None:
    """n_tasks tasks over the last 40 hours, 10 % of them evaluated by every version.

    Rows are generated inside the database (INSERT ... SELECT over a recursive counter): 100,000
    model instances through bulk_create take about a minute on this shared 2-core machine, this takes
    a few seconds, and the page under test reads exactly the same rows either way.
    """
    from django.db import connection

    pg = connection.vendor == "postgresql"
    span = 40 * 3600
    offset = f"(i * 7919) %% {span}"
    if pg:
        when = f"%(now)s::timestamptz - ({offset}) * interval '1 second'"
        empty_list, empty_obj, true = "'[]'::jsonb", "'{}'::jsonb", "true"
    else:
        when = f"strftime('%%Y-%%m-%%d %%H:%%M:%%f', %(now)s, '-' || ({offset}) || ' seconds')"
        empty_list, empty_obj, true = "'[]'", "'{}'", "1"
    now_param = now if pg else now.strftime("%Y-%m-%d %H:%M:%S")
    version_ids = ", ".join(str(v.pk) for v in versions)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO agents_task (agent_id, external_id, messages, output, metadata, completed_at,
                                         ingested_at, sampled, has_failures)
                WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < %(last)s)
                SELECT %(agent)s, 'bulk-' || i, {empty_list}, 'x', {empty_obj}, {when}, {when},
                       (i %% 10 = 0), (i %% 20 = 0)
                FROM seq""",
            {"agent": agent.pk, "last": n_tasks - 1, "now": now_param},
        )
        cursor.execute(
            f"""INSERT INTO runs_checkresult (check_version_id, task_id, monitor_id, required, outcome,
                                              expected, actual, explanation, evidence, details, observed_at,
                                              created_at)
                SELECT v.id, t.id, %(monitor)s, {true},
                       CASE (t.id + v.id) %% 5 WHEN 0 THEN 'pass' WHEN 1 THEN 'pass' WHEN 2 THEN 'fail'
                            WHEN 3 THEN 'indeterminate' ELSE 'error' END,
                       '', '', 'bulk', {empty_list}, {empty_obj}, t.completed_at, t.completed_at
                FROM agents_task t CROSS JOIN checks_checkversion v
                WHERE t.agent_id = %(agent)s AND t.sampled AND v.id IN ({version_ids})""",
            {"agent": agent.pk, "monitor": monitor.pk},
        )
    assert Task.objects.filter(agent=agent).count() == n_tasks


@pytest.mark.parametrize("n_tasks", [10, 100_000])
def test_monitor_page_queries_are_bounded(
    client, member, agent, make_check, n_tasks, django_assert_num_queries
):
    """100,000 tasks and 5 checks: the same queries as 10 tasks (aggregates per bucket, not rows)."""
    checks = [make_check(f"Check {i}", text=f"t{i}") for i in range(5)]
    monitor = monitoring.create_monitor(
        agent=agent, by=member, name="Big", checks=[c.pk for c in checks], sample_rate=10
    )
    now = datetime.now(UTC)
    _build_monitor_data(agent, monitor, [c.current_version for c in checks], n_tasks, now)
    client.force_login(member)
    # session, user, monitor (+agent, team), attached checks, results per (bucket, version), versions
    # seen, tasks per bucket, evaluated per bucket, latest failures, role, the user's teams
    with django_assert_num_queries(11):
        response = client.get(reverse("monitors:monitor-detail", args=[monitor.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    if n_tasks == 100_000:
        assert f'<span class="v">{n_tasks}</span>' in html
        assert '<span class="v">10000</span>' in html  # evaluated


def test_select_all_matching_keeps_the_time_range(
    client, member, agent, checks, django_capture_on_commit_callbacks
):
    ingest(agent, member, [task_item(i) for i in range(10)], django_capture_on_commit_callbacks)
    client.force_login(member)
    listing = client.get(
        reverse("monitors:task-list"), {"agent": agent.pk, "completed_after": "2025-01-01T00:05"}
    )
    html = listing.content.decode()
    assert "5</strong> matching tasks" in html
    hidden = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', html))
    assert hidden["completed_after"].startswith("2025-01-01T00:05:00")
    picker = client.get(reverse("monitors:evaluation-create"), {"all": "1", **hidden})
    assert "Evaluate 5 tasks" in picker.content.decode()


def test_monitor_form_reloads_checks_for_the_chosen_agent(client, member, admin_user, team, agent, checks):
    from agents.services import create_agent
    from checks.services import create_check

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/other")
    create_check(agent=other, by=member, name="Other check", kind="text_includes", config={"text": "x"})
    client.force_login(member)
    fragment = client.get(
        reverse("monitors:monitor-create"), {"agent": other.pk}, headers={"HX-Request": "true"}
    )
    html = fragment.content.decode()
    assert html.lstrip().startswith('<form id="monitor-form"') and "Other check" in html
    assert "Says answer" not in html


def test_select_all_matching_without_agent_filter_when_tasks_share_one_agent(
    client, member, agent, checks, django_capture_on_commit_callbacks
):
    """Every matching task belongs to one agent: "select all" needs no agent filter (issue 14, 10)."""
    ingest(agent, member, [task_item(i) for i in range(5)], django_capture_on_commit_callbacks)
    client.force_login(member)
    picker = client.get(reverse("monitors:evaluation-create"), {"all": "1"}, follow=True)
    html = picker.content.decode()
    assert "Filter the task list to one agent" not in html
    assert f"Evaluate 5 tasks of {SUPPORT_BOT}" in html
    with django_capture_on_commit_callbacks(execute=True):
        launched = client.post(reverse("monitors:evaluation-create"), {"all": "1", "checks": [checks[0].pk]})
    evaluation = Evaluation.objects.get()
    assert launched.status_code == 302 and evaluation.tasks.count() == 5


def test_select_all_matching_over_two_agents_is_refused(
    client, member, admin_user, team, agent, django_capture_on_commit_callbacks
):
    from agents.services import create_agent

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/other")
    ingest(agent, member, [task_item(i) for i in range(3)], django_capture_on_commit_callbacks)
    ingest(other, member, [task_item(i) for i in range(3, 5)], django_capture_on_commit_callbacks)
    client.force_login(member)
    picker = client.get(reverse("monitors:evaluation-create"), {"all": "1"}, follow=True)
    assert "Filter the task list to one agent" in picker.content.decode()
    one = client.get(reverse("monitors:evaluation-create"), {"all": "1", "q": "c1"}, follow=True)
    assert f"Evaluate 1 task of {SUPPORT_BOT}" in one.content.decode()  # the filter leaves one agent


def _field_errors(html: str, name: str) -> list[str]:
    """The messages rendered under the field `name` (the partial's <ul id="id_<name>_error">)."""
    match = re.search(rf'<ul class="errorlist" id="id_{name}_error"[^>]*>(.*?)</ul>', html, re.S)
    return re.findall(r"<li>(.*?)</li>", match.group(1)) if match else []


DJANGO_DEFAULT_MESSAGES = ("This field is required", "Select a valid choice", "Ensure this value")


def test_monitor_form_reports_every_problem_inline_on_its_field(
    client, member, admin_user, team, agent, checks
):
    """No browser popups, no Django default messages: each field says what is wrong (issue 14, 13)."""
    from agents.services import create_agent
    from checks.services import create_check

    other = create_agent(team=team, by=admin_user, name="Other bot", endpoint_url="http://127.0.0.1:9/other")
    foreign = create_check(agent=other, by=member, name="Other's", kind="text_includes", config={"text": "x"})
    client.force_login(member)
    page = client.get(reverse("monitors:monitor-create"), {"agent": agent.pk}).content.decode()
    assert re.search(r'<form id="monitor-form"[^>]*\bnovalidate\b', page)

    url = reverse("monitors:monitor-create")
    response = client.post(
        url, {"agent": agent.pk, "name": "  ", "sample_rate": "150", "checks": [foreign.pk]}
    )
    html = response.content.decode()
    assert response.status_code == 200 and not Monitor.objects.exists()
    assert _field_errors(html, "name") == ["a monitor needs a name"]
    assert _field_errors(html, "sample_rate") == ["must be a percentage between 0 and 100"]
    assert _field_errors(html, "checks") == [f"check {foreign.pk} is not in Support bot&#x27;s library"]
    assert not any(default in html for default in DJANGO_DEFAULT_MESSAGES)

    none = client.post(url, {"agent": agent.pk, "name": "Live", "sample_rate": "", "active": "on"})
    html = none.content.decode()
    assert _field_errors(html, "sample_rate") == ["must be a percentage between 0 and 100"]
    assert _field_errors(html, "checks") == ["choose at least one check to run on the sampled tasks"]
    assert 'value="Live"' in html  # what was typed stays
    assert not any(default in html for default in DJANGO_DEFAULT_MESSAGES)

    wrong = client.post(
        url, {"agent": "999999", "name": "Live", "sample_rate": "5", "checks": [checks[0].pk]}
    )
    assert _field_errors(wrong.content.decode(), "agent") == ["choose one of your team&#x27;s agents"]
    assert not Monitor.objects.exists()

    monitor = monitoring.create_monitor(agent=agent, by=member, name="Live", checks=[checks[0].pk])
    edit = client.post(
        reverse("monitors:monitor-edit", args=[monitor.pk]),
        {"name": "Live", "sample_rate": "-1", "checks": []},
    )
    html = edit.content.decode()
    assert re.search(r'<form id="monitor-form"[^>]*\bnovalidate\b', html)
    assert _field_errors(html, "sample_rate") == ["must be a percentage between 0 and 100"]
    assert _field_errors(html, "checks") == ["choose at least one check to run on the sampled tasks"]
    monitor.refresh_from_db()
    assert monitor.sample_rate == 10 and monitor.checks.count() == 1


def _listed_ids(html: str) -> list[str]:
    return re.findall(r'<td><a href="/tasks/\d+/">([^<]+)</a></td>', html)


def test_task_list_sorts_by_allowed_columns(
    client, member, admin_user, team, agent, django_capture_on_commit_callbacks
):
    from agents.services import create_agent

    other = create_agent(team=team, by=admin_user, name="Alpha bot", endpoint_url="http://127.0.0.1:9/alpha")
    ingest(agent, member, [task_item(i) for i in (3, 1, 2)], django_capture_on_commit_callbacks)
    ingest(other, member, [task_item(i) for i in (4,)], django_capture_on_commit_callbacks)
    client.force_login(member)
    url = reverse("monitors:task-list")
    assert _listed_ids(client.get(url).content.decode()) == ["conv-4", "conv-3", "conv-2", "conv-1"]
    assert _listed_ids(client.get(url, {"sort": "completed_at"}).content.decode()) == [
        "conv-1",
        "conv-2",
        "conv-3",
        "conv-4",
    ]
    assert _listed_ids(client.get(url, {"sort": "-external_id"}).content.decode()) == [
        "conv-4",
        "conv-3",
        "conv-2",
        "conv-1",
    ]
    by_agent = client.get(url, {"sort": "agent"}).content.decode()
    assert _listed_ids(by_agent) == ["conv-4", "conv-3", "conv-2", "conv-1"]  # Alpha bot, then newest first
    # The column headers are sort links that keep the filters; the sorted one says how it is sorted.
    assert 'aria-sort="ascending"' in by_agent
    html = client.get(url, {"sort": "external_id", "agent": agent.pk}).content.decode()
    assert f'href="?agent={agent.pk}&amp;sort=-external_id"' in html  # clicking again reverses
    assert f"agent={agent.pk}&amp;sort=external_id&amp;page=" not in html  # (one page: no pagination)
    bad = client.get(url, {"sort": "password"})
    assert bad.status_code == 200
    assert "must be one of -completed_at, completed_at, external_id" in bad.content.decode()


def test_task_list_search_matches_external_id_and_output(
    client, member, agent, checks, django_capture_on_commit_callbacks
):
    items = [task_item(i) for i in range(6)]
    items[2]["external_id"] = "order-EC-1042"
    items[4]["output"] = "Your Refund is on its way"
    ingest(agent, member, items, django_capture_on_commit_callbacks)
    client.force_login(member)
    url = reverse("monitors:task-list")
    assert _listed_ids(client.get(url, {"q": "ec-1042"}).content.decode()) == ["order-EC-1042"]
    assert _listed_ids(client.get(url, {"q": "refund"}).content.decode()) == ["conv-4"]
    assert "conv-3" in _listed_ids(client.get(url, {"q": '"c3"'}).content.decode())  # metadata still
    html = client.get(url).content.decode()
    assert re.search(r'<input type="search" name="q"[^>]*id="id_q"', html)
    # "Select all matching" after a search evaluates exactly the tasks listed.
    picker = client.get(reverse("monitors:evaluation-create"), {"all": "1", "q": "refund"}, follow=True)
    assert f"Evaluate 1 task of {SUPPORT_BOT}" in picker.content.decode()


@pytest.mark.parametrize("n", [1, 60])
def test_sorted_and_searched_task_list_queries_do_not_grow(
    client, member, agent, n, django_assert_num_queries, django_capture_on_commit_callbacks
):
    response = _task_list_in_7_queries(
        client,
        member,
        agent,
        n,
        django_assert_num_queries,
        django_capture_on_commit_callbacks,
        {"sort": "-agent", "q": "answer"},
    )
    assert len(_listed_ids(response.content.decode())) == min(n, 50)
