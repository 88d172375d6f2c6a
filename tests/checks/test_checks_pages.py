"""Checks tab: kind-driven forms (HTMX swap), inline errors keeping input, versions with diffs, filters."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from checks import kinds
from checks.models import Check
from checks.services import create_check, create_test, create_test_set, edit_check
from tests.support.page_fixtures import live_agent, login, order_test, run_now  # noqa: F401

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _post(client, url, **data):
    return client.post(url, data)


def _tool_usage(tool: str, mode: str, count: str, *rows: tuple[str, str, str]) -> dict[str, str]:
    """The tool_usage form's config fields; ``rows`` are its inputs' (field, op, value)."""
    data = {"cfg-tool": tool, "cfg-mode": mode, "cfg-count": count, "cfg-inputs-count": str(len(rows))}
    for i, (field, op, value) in enumerate(rows):
        data |= {f"cfg-inputs-{i}-field": field, f"cfg-inputs-{i}-op": op, f"cfg-inputs-{i}-value": value}
    return data


def test_kind_select_swaps_the_config_fields_built_from_field_specs(login, member, agent):
    client = login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    for kind in kinds.all_kinds():
        response = client.get(url, {"kind": kind.name}, HTTP_HX_TARGET="config-fields", **HTMX)
        html = response.content.decode()
        assert html.lstrip().startswith('<fieldset id="config-fields"'), kind.name  # only the fragment
        assert f'data-kind="{kind.name}"' in html
        for spec in kind.fields:
            assert spec.label in html and f"cfg-{spec.name}" in html, (kind.name, spec.name)


def test_create_checks_of_three_kinds(login, member, agent):
    client = login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    r1 = _post(client, url, name="Mentions order", kind="text_includes", **{"cfg-text": "EC-1042"})
    r2 = _post(
        client,
        url,
        name="Looked up",
        kind="tool_usage",
        **_tool_usage(
            "lookup_order",
            "exactly",
            "1",
            ("orderId", "matches", "^EC-\\d+$"),
            ("", "equals", ""),  # an untouched row
        ),
    )
    r3 = _post(
        client,
        url,
        name="Calls the API",
        kind="trace",
        **{"cfg-called": "GET /orders/*\n\n", "cfg-not_called": "POST /refunds", "cfg-status": ""},
    )
    assert [r.status_code for r in (r1, r2, r3)] == [302, 302, 302]
    configs = {c.name: c.current_version.config for c in Check.objects.filter(agent=agent)}
    assert configs["Mentions order"] == {"text": "EC-1042", "case_sensitive": False}  # unticked box = False
    assert configs["Looked up"]["inputs"] == [{"field": "orderId", "op": "matches", "value": "^EC-\\d+$"}]
    assert (configs["Looked up"]["mode"], configs["Looked up"]["count"]) == ("exactly", 1)
    assert configs["Calls the API"]["called"] == ["GET /orders/*"]


def test_row_values_round_trip_as_json_when_they_parse(login, member, agent):
    check = create_check(
        agent=agent,
        by=member,
        name="Typed",
        kind="tool_usage",
        config={
            "tool": "t",
            "mode": "first",
            "inputs": [
                {"field": "a", "op": "equals", "value": 5},
                {"field": "b", "op": "equals", "value": "5"},
            ],
        },
    )
    client = login(member)
    html = client.get(reverse("checks:check-edit", args=[check.pk])).content.decode()
    assert 'name="cfg-inputs-0-value" value="5"' in html
    assert 'name="cfg-inputs-1-value" value="&quot;5&quot;"' in html  # the string "5" stays a string
    response = client.post(
        reverse("checks:check-edit", args=[check.pk]),
        {
            "name": "Typed",
            "kind": "tool_usage",
            **_tool_usage("t", "first", "", ("a", "equals", "5"), ("b", "equals", '"5"')),
            "cfg-node": "",
        },
        follow=True,
    )
    assert "Nothing changed" in response.content.decode()
    check.refresh_from_db()
    assert check.version == 1


def test_bad_config_is_rejected_inline_with_the_kinds_message_keeping_input(login, member, agent):
    client = login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    response = _post(
        client,
        url,
        name="Order pattern",
        kind="tool_usage",
        **_tool_usage("lookup_order", "at_least", "", ("orderId", "matches", "^EC-(")),
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "this field is required for mode at_least" in html  # the kind's own message for count
    assert "row 1, value:" in html and "not a valid RE2 pattern" in html
    assert 'value="Order pattern"' in html and 'value="lookup_order"' in html and 'value="^EC-("' in html
    assert not Check.objects.filter(name="Order pattern").exists()


def test_unparseable_values_and_service_errors_show_together(login, member, agent):
    response = _post(
        login(member),
        reverse("checks:check-create", args=[agent.pk]),
        name="",
        kind="json_schema",
        **{"cfg-schema": "{not json"},
    )
    html = response.content.decode()
    assert "is not valid JSON" in html and "a check needs a name" in html
    assert "{not json" in html


def test_add_and_remove_a_row_in_place_without_saving(login, member, agent):
    client = login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    data = {
        "name": "Draft",
        "kind": "tool_usage",
        "cfg-tool": "lookup_order",
        "cfg-inputs-count": "0",
        "_action": "add:inputs",
    }
    html = client.post(url, data, HTTP_HX_TARGET="config-fields", **HTMX).content.decode()
    assert html.lstrip().startswith('<fieldset id="config-fields"')
    assert 'name="cfg-inputs-0-field"' in html and 'value="lookup_order"' in html
    data.update(
        {
            "cfg-inputs-count": "1",
            "cfg-inputs-0-field": "orderId",
            "cfg-inputs-0-op": "equals",
            "_action": "remove:inputs:0",
        }
    )
    html = client.post(url, data, **HTMX).content.decode()
    assert 'name="cfg-inputs-0-field"' not in html
    assert not Check.objects.exists()


def test_edit_makes_version_two_and_history_shows_what_changed(login, member, agent):
    check = create_check(
        agent=agent, by=member, name="Mentions order", kind="text_includes", config={"text": "EC-1042"}
    )
    client = login(member)
    response = client.post(
        reverse("checks:check-edit", args=[check.pk]),
        {
            "name": "Mentions order",
            "kind": "text_includes",
            "cfg-text": "EC-2000",
            "cfg-case_sensitive": "on",
        },
    )
    assert response.status_code == 302
    check.refresh_from_db()
    assert check.version == 2
    html = client.get(check.get_absolute_url()).content.decode()
    assert "Version 2" in html and "Version 1" in html
    assert "<code>config.text</code>" in html
    assert "<del>EC-1042</del>" in html and "<ins>EC-2000</ins>" in html


def test_filters_with_counts_and_htmx_fragment(login, member, agent):
    used = create_check(agent=agent, by=member, name="Used one", kind="text_includes", config={"text": "a"})
    create_check(agent=agent, by=member, name="Spare one", kind="latency", config={"max_ms": 100})
    test_set = create_test_set(agent=agent, by=member, name="Set")
    create_test(test_set=test_set, by=member, name="T", scenarios=["hi"], checks=[used.pk])
    client = login(member)
    url = reverse("checks:check-list", args=[agent.pk])
    html = client.get(url).content.decode()
    assert 'data-filter="all">All<span class="count">2</span>' in html
    assert 'data-filter="in_tests">In tests<span class="count">1</span>' in html
    assert 'data-filter="in_monitors">In dashboard<span class="count">0</span>' in html
    assert 'data-filter="unused">Unused<span class="count">1</span>' in html
    assert "Text includes" in html and "Latency" in html  # grouped by kind
    fragment = client.get(url, {"used": "unused"}, HTTP_HX_TARGET="checks-panel", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="checks-panel">')
    assert "Spare one" in fragment and "Used one" not in fragment


def test_viewer_sees_no_write_buttons_and_cannot_write(login, viewer, member, agent):
    check = create_check(agent=agent, by=member, name="C", kind="text_includes", config={"text": "a"})
    client = login(viewer)
    html = client.get(reverse("checks:check-list", args=[agent.pk])).content.decode()
    assert "New check" not in html
    assert ">Edit<" not in client.get(check.get_absolute_url()).content.decode()
    refused = client.get(reverse("checks:check-create", args=[agent.pk]))
    assert refused.status_code == 403 and "Viewers cannot add checks." in refused.content.decode()
    data = {"name": "X", "kind": "text_includes", "cfg-text": "x"}
    writes = (reverse("checks:check-create", args=[agent.pk]), reverse("checks:check-edit", args=[check.pk]))
    for url in writes:
        assert client.post(url, data).status_code == 403, url
    assert client.post(reverse("checks:check-archive", args=[check.pk])).status_code == 403
    assert Check.objects.count() == 1 and Check.objects.get().version == 1


def test_another_teams_checks_are_404(login, outsider, member, agent):
    check = create_check(agent=agent, by=member, name="C", kind="text_includes", config={"text": "a"})
    client = login(outsider)
    assert client.get(reverse("checks:check-list", args=[agent.pk])).status_code == 404
    assert client.get(reverse("checks:check-create", args=[agent.pk])).status_code == 404
    assert client.get(check.get_absolute_url()).status_code == 404
    assert client.post(reverse("checks:check-edit", args=[check.pk]), {"name": "x"}).status_code == 404


def test_archive_and_restore_are_admin_only(login, admin_user, member, agent):
    check = create_check(agent=agent, by=member, name="C", kind="text_includes", config={"text": "a"})
    assert login(member).post(reverse("checks:check-archive", args=[check.pk])).status_code == 403
    login(admin_user).post(reverse("checks:check-archive", args=[check.pk]))
    check.refresh_from_db()
    assert check.archived_at is not None
    html = login(admin_user).get(reverse("checks:check-list", args=[agent.pk])).content.decode()
    assert check.get_absolute_url() not in html
    login(admin_user).post(reverse("checks:check-archive", args=[check.pk]), {"restore": "1"})
    check.refresh_from_db()
    assert check.archived_at is None


def test_nothing_changed_makes_no_version(login, member, agent):
    check = create_check(agent=agent, by=member, name="C", kind="text_includes", config={"text": "a"})
    edit_check(check=check, by=member, config={"text": "b"})
    response = login(member).post(
        reverse("checks:check-edit", args=[check.pk]),
        {"name": "C", "kind": "text_includes", "cfg-text": "b", "cfg-case_sensitive": "on"},
        follow=True,
    )
    assert "Nothing changed" in response.content.decode()
    check.refresh_from_db()
    assert check.version == 2


def test_check_page_links_to_the_runs_that_used_it(login, member, order_test, order_checks):
    from runs.services import launch_run

    run = launch_run(test=order_test, by=member)
    check = order_test.current_version.attached_checks.first().library_check
    unused = create_check(
        agent=check.agent, by=member, name="Spare", kind="text_includes", config={"text": "x"}
    )
    client = login(member)
    html = client.get(check.get_absolute_url()).content.decode()
    assert "Recent runs using it" in html
    assert f'href="{run.get_absolute_url()}"' in html
    html = client.get(unused.get_absolute_url()).content.decode()
    assert "No run has used this check yet." in html


def test_nul_characters_and_deep_json_in_a_config_are_field_errors(client, member, agent):
    client.raise_request_exception = False
    client.force_login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    response = client.post(url, {"name": "Greets", "kind": "text_includes", "cfg-text": "a\x00b"})
    assert response.status_code == 200
    assert "must not contain NUL characters" in response.content.decode()
    deep = '{"a": ' * 5000 + "1" + "}" * 5000
    response = client.post(url, {"name": "Shape", "kind": "json_schema", "cfg-schema": deep})
    assert response.status_code == 200
    assert "is nested more than 32 levels deep" in response.content.decode()
    response = client.post(
        url,
        {"name": "Deep row", "kind": "tool_usage",
         **_tool_usage("t", "at_least", "1", ("a", "equals", "[" * 5000 + "]" * 5000))},
    )
    assert response.status_code == 200
    assert "is nested more than 32 levels deep" in response.content.decode()
    assert not Check.objects.exists()


def test_a_config_number_over_its_bound_is_an_inline_error(login, member, agent):
    response = login(member).post(
        reverse("checks:check-create", args=[agent.pk]),
        {"name": "Looked up", "kind": "tool_usage",
         **_tool_usage("lookup_order", "at_least", "1" + "0" * 30)},
    )
    assert response.status_code == 200
    assert "must be at most 1,000" in response.content.decode()
    assert not Check.objects.exists()


def test_check_form_warns_when_no_judge_key_is_configured(login, member, agent, settings):
    settings.EVALCONSOLE_JUDGE_API_KEY = ""
    client = login(member)
    url = reverse("checks:check-create", args=[agent.pk])
    html = client.get(url, {"kind": "ai_judge"}).content.decode()
    assert "No judge key is configured" in html and "EVALCONSOLE_JUDGE_API_KEY" in html
    # Switching the kind swaps only the config fields: the warning comes with them.
    fragment = client.get(url, {"kind": "ai_judge"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="config-fields")
    assert "No judge key is configured" in fragment.content.decode()
    assert "No judge key is configured" not in client.get(url, {"kind": "text_includes"}).content.decode()
    settings.EVALCONSOLE_JUDGE_API_KEY = "sk-set"
    assert "No judge key is configured" not in client.get(url, {"kind": "ai_judge"}).content.decode()


def _check_order(html: str) -> list[str]:
    return re.findall(r'<tr class="check-row" data-check="([^"]+)">', html)


def test_check_list_sorts_within_each_kind_and_searches_by_name(login, member, agent):
    beta = create_check(agent=agent, by=member, name="Beta", kind="text_includes", config={"text": "b"})
    create_check(agent=agent, by=member, name="alpha", kind="text_includes", config={"text": "a"})
    create_check(agent=agent, by=member, name="Gamma", kind="text_includes", config={"text": "g"})
    create_check(agent=agent, by=member, name="Fast", kind="latency", config={"max_ms": 100})
    edit_check(check=beta, by=member, config={"text": "B"})  # version 2
    create_test(
        test_set=create_test_set(agent=agent, by=member, name="Set"),
        by=member,
        name="T",
        scenarios=["hi"],
        checks=[beta.pk],
    )
    client = login(member)
    url = reverse("checks:check-list", args=[agent.pk])

    def order(**params):
        return _check_order(client.get(url, params).content.decode())

    # Groups by kind stay (latency before text_includes); the sort applies inside each group.
    assert order() == ["Fast", "alpha", "Beta", "Gamma"]  # by name, any case
    assert order(sort="-name") == ["Fast", "Gamma", "Beta", "alpha"]
    assert order(sort="-version") == ["Fast", "Beta", "Gamma", "alpha"]  # v2 first; ties newest first
    assert order(sort="-used") == ["Fast", "Beta", "Gamma", "alpha"]
    assert order(sort="updated") == ["Fast", "alpha", "Gamma", "Beta"]  # Beta was edited last
    assert order(q="MMA") == ["Gamma"]
    assert order(q="a", used="in_tests") == ["Beta"]
    html = client.get(url, {"q": "Et", "sort": "-name"}).content.decode()
    # The counts follow the search; the filter links and sort links keep it.
    assert 'data-filter="all">All<span class="count">1</span>' in html
    assert 'data-filter="in_tests">In tests<span class="count">1</span>' in html
    assert f'href="/checks/agents/{agent.pk}/?q=Et&amp;sort=-name&amp;used=unused"' in html
    assert 'aria-sort="descending"><a class="sort" href="?q=Et&amp;sort=name"' in html
    assert 'name="q" id="check-q" value="Et"' in html and "Clear search" in html
    assert "No check named like “zzz”." in client.get(url, {"q": "zzz"}).content.decode()
    fragment = client.get(url, {"q": "gam"}, HTTP_HX_TARGET="checks-panel", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="checks-panel">') and _check_order(fragment) == ["Gamma"]


def test_check_list_says_why_a_sort_or_search_was_refused(login, member, agent):
    for name in ("One", "Two"):
        create_check(agent=agent, by=member, name=name, kind="text_includes", config={"text": "x"})
    client = login(member)
    url = reverse("checks:check-list", args=[agent.pk])
    for params, message in (
        ({"sort": "created_by__password"}, "Cannot sort by &#x27;created_by__password&#x27;: sorted by name"),
        ({"sort": "-"}, "Cannot sort by"),
        ({"q": "x" * 101}, "Search for at most 100 characters"),
        ({"q": "\x00"}, "The search cannot contain NUL characters."),
    ):
        response = client.get(url, params)
        html = response.content.decode()
        assert response.status_code == 200 and message in html, params
        assert _check_order(html) == ["One", "Two"]


# ---------------------------------------------------------------- archiving a check tests use (issue 14: 4)


@pytest.fixture
def used_check(agent, member):
    check = create_check(agent=agent, by=member, name="Greets", kind="text_includes", config={"text": "hi"})
    test_set = create_test_set(agent=agent, by=member, name="Support")
    tests = [
        create_test(test_set=test_set, by=member, name=name, scenarios=["hello"], checks=[check.pk])
        for name in ("Welcome", "Refund")
    ]
    return check, tests


def test_archiving_a_check_tests_use_asks_first_naming_them(login, admin_user, used_check):
    check, tests = used_check
    client = login(admin_user)
    page = client.get(check.get_absolute_url()).content.decode()
    assert "Archive" in page
    response = client.post(reverse("checks:check-archive", args=[check.pk]))
    html = response.content.decode()
    assert response.status_code == 200  # a confirmation, nothing archived yet
    check.refresh_from_db()
    assert check.archived_at is None
    confirm = html.split('id="archive-confirm"')[1].split("</form>")[0]
    assert "2 tests use this check" in confirm
    for test in tests:
        assert f'href="{test.get_absolute_url()}"' in confirm
    assert "keep running its last version, v1" in confirm
    assert 'name="confirm" value="1"' in confirm
    response = client.post(reverse("checks:check-archive", args=[check.pk]), {"confirm": "1"}, follow=True)
    check.refresh_from_db()
    assert check.archived_at is not None
    html = response.content.decode()
    assert "Check Greets archived" in html and "Refund and Welcome keep running v1" in html
    # The archived check's page says what happens to the tests that still use it.
    assert "Tests that still use it keep running its last version, v1" in html


def test_archiving_an_unused_check_needs_no_confirmation(login, admin_user, agent, member):
    check = create_check(agent=agent, by=member, name="Spare", kind="text_includes", config={"text": "x"})
    response = login(admin_user).post(reverse("checks:check-archive", args=[check.pk]))
    assert response.status_code == 302
    check.refresh_from_db()
    assert check.archived_at is not None


def test_the_test_page_shows_an_archived_check_as_archived(login, admin_user, member, used_check):
    from checks.services import archive_check

    check, tests = used_check
    archive_check(check=check, by=admin_user, confirm=True)
    html = login(member).get(tests[0].get_absolute_url()).content.decode()
    row = html.split('data-check="Greets"')[1].split("</tr>")[0]
    assert '<span class="tag warn">archived</span>' in row
    assert "Runs of this version still use v1" in row


def test_archived_checks_are_listed_under_the_archived_filter_and_admins_restore_them(
    login, admin_user, member, agent
):
    from checks.services import archive_check

    kept = create_check(agent=agent, by=member, name="Kept", kind="text_includes", config={"text": "a"})
    gone = create_check(agent=agent, by=member, name="Gone", kind="latency", config={"max_ms": 100})
    archive_check(check=gone, by=admin_user)
    url = reverse("checks:check-list", args=[agent.pk])
    client = login(admin_user)
    html = client.get(url).content.decode()
    assert 'data-filter="archived">Archived<span class="count">1</span>' in html
    assert gone.get_absolute_url() not in html and kept.get_absolute_url() in html
    archived = client.get(url, {"archived": "1"}).content.decode()
    assert gone.get_absolute_url() in archived and kept.get_absolute_url() not in archived
    assert 'aria-current="true" data-filter="archived"' in archived
    assert f'action="{reverse("checks:check-archive", args=[gone.pk])}"' in archived  # restore in the row
    fragment = client.get(url, {"archived": "1"}, HTTP_HX_TARGET="checks-panel", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="checks-panel">') and gone.get_absolute_url() in fragment

    member_view = login(member).get(url, {"archived": "1"}).content.decode()
    assert gone.get_absolute_url() in member_view and "Restore" not in member_view
    response = login(admin_user).post(reverse("checks:check-archive", args=[gone.pk]), {"restore": "1"})
    assert response.status_code == 302
    gone.refresh_from_db()
    assert gone.archived_at is None
    assert gone.get_absolute_url() in client.get(url).content.decode()


def test_the_checks_archived_filter_refuses_a_value_that_is_not_a_boolean(login, member, agent):
    response = login(member).get(reverse("checks:check-list", args=[agent.pk]), {"archived": "maybe"})
    assert response.status_code == 400
    assert "archived: &#x27;maybe&#x27; is not a boolean" in response.content.decode()


@pytest.fixture
def team_library(team, admin_user, member, agent, other_team, outsider):
    """Checks of two agents of `team`, and one of another team's agent that must never show."""
    from agents.services import create_agent

    billing = create_agent(team=team, by=admin_user, name="Billing bot", endpoint_url="http://127.0.0.1:9/b")
    foreign = create_agent(team=other_team, by=outsider, name="Foreign bot", endpoint_url="http://127.0.0.1:9/f")
    create_check(agent=agent, by=member, name="Mentions order", kind="text_includes", config={"text": "EC"})
    create_check(agent=billing, by=member, name="Fast reply", kind="latency", config={"max_ms": 500})
    create_check(
        agent=billing, by=member, name="Order looked up", kind="tool_usage",
        config={"tool": "lookup_order", "mode": "at_least", "count": 1},
    )
    create_check(agent=foreign, by=outsider, name="Foreign order", kind="text_includes", config={"text": "x"})
    return {"support": agent, "billing": billing, "foreign": foreign}


def test_the_checks_menu_opens_a_library_of_every_agent_of_the_team_with_search(
    login, member, team_library
):
    billing = team_library["billing"]
    client = login(member)
    url = reverse("checks:check-index")
    response = client.get(url)
    assert response.status_code == 200  # the library itself, not a redirect to the first agent's tab
    html = response.content.decode()
    assert 'role="search"' in html and f'href="{reverse("checks:check-list", args=[billing.pk])}"' in html

    def shown(**params):
        page = client.get(url, params)
        assert page.status_code == 200, params
        body = page.content.decode()
        return {n for n in ("Mentions order", "Fast reply", "Order looked up", "Foreign order") if n in body}

    assert shown() == {"Mentions order", "Fast reply", "Order looked up"}  # never another team's
    assert shown(q="ORDER") == {"Mentions order", "Order looked up"}  # by name, any case
    assert shown(q="billing") == {"Fast reply", "Order looked up"}  # by agent name
    assert shown(q="latency") == {"Fast reply"}  # by kind name
    assert shown(q="tool usage") == {"Order looked up"}  # by kind label
    assert shown(kind="tool_usage") == {"Order looked up"}
    assert shown(agent=billing.pk) == {"Fast reply", "Order looked up"}
    assert shown(agent=billing.pk, q="fast") == {"Fast reply"}


def test_the_library_paginates_and_lists_archived_checks_apart(login, member, admin_user, agent):
    from checks.services import archive_check

    for i in range(51):
        create_check(agent=agent, by=member, name=f"Check {i:02}", kind="latency", config={"max_ms": 10 + i})
    archive_check(check=Check.objects.get(name="Check 00"), by=admin_user)
    client = login(member)
    url = reverse("checks:check-index")
    first = client.get(url).content.decode()
    assert first.count('class="check-row"') == 50 and "Page 1 of 1" not in first and "Check 00" not in first
    archived = client.get(url, {"archived": "1"}).content.decode()
    assert archived.count('class="check-row"') == 1 and "Check 00" in archived
    for i in range(2):
        create_check(agent=agent, by=member, name=f"More {i}", kind="latency", config={"max_ms": 5})
    second = client.get(url, {"page": 2}).content.decode()
    assert second.count('class="check-row"') == 2 and "Page 2 of 2" in second


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"kind": "nope"}, "Select a valid choice"),
        ({"agent": "abc"}, "Select a valid choice"),
        ({"q": "a\x00b"}, "must not contain NUL characters"),
        ({"q": "x" * 201}, "at most 200 characters"),
        ({"archived": "maybe"}, "archived: &#x27;maybe&#x27; is not a boolean"),
    ],
)
def test_the_library_search_answers_bad_input_with_a_clear_error(
    login, member, team_library, params, message
):
    response = login(member).get(reverse("checks:check-index"), params)
    assert response.status_code == 400
    html = response.content.decode()
    assert message in html and 'class="check-row"' not in html


def test_the_library_filtered_by_another_teams_agent_is_404(login, member, team_library):
    url = reverse("checks:check-index")
    client = login(member)
    assert client.get(url, {"agent": team_library["foreign"].pk}).status_code == 404
    assert client.get(url, {"agent": "9" * 30}).status_code == 404  # beyond any id: no overflow
