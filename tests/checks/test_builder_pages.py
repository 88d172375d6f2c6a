"""Test sets and the test builder: in-place edits, the live counter, limit errors, versions."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from checks.models import Check, Test, TestSet
from checks.services import create_check, create_test
from tests.support.page_fixtures import live_agent, login, order_test, run_now  # noqa: F401

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def library(agent, member):
    return [
        create_check(
            agent=agent, by=member, name="Mentions order", kind="text_includes", config={"text": "EC"}
        ),
        create_check(agent=agent, by=member, name="Quick", kind="latency", config={"max_ms": 500}),
    ]


def _builder(**overrides):
    data = {
        "name": "Order status",
        "scenario_count": "2",
        "s-0-name": "Single",
        "s-0-mode": "single",
        "s-0-input": "Where is EC-1042?",
        "s-0-metadata": "",
        "s-1-name": "Chat",
        "s-1-mode": "chat",
        "s-1-msg_count": "3",
        "s-1-metadata": '{"tier": "gold"}',
        "s-1-m-0-role": "user",
        "s-1-m-0-content": "I want a refund",
        "s-1-m-1-role": "assistant",
        "s-1-m-1-content": "Which order?",
        "s-1-m-2-role": "user",
        "s-1-m-2-content": "EC-1042",
        "check_count": "0",
        "samples_per_scenario": "2",
        "min_valid_per_scenario": "1",
        "required_pass_rate": "100",
    }
    data.update(overrides)
    return data


def test_create_test_set_then_a_test_with_both_scenario_kinds(login, member, agent, library):
    client = login(member)
    response = client.post(
        reverse("checks:testset-create", args=[agent.pk]), {"name": "Orders", "description": ""}
    )
    test_set = TestSet.objects.get(agent=agent, name="Orders")
    assert response["Location"] == test_set.get_absolute_url()
    data = _builder(
        check_count="2", **{"c-0-id": str(library[0].pk), "c-1-id": str(library[1].pk), "c-1-advisory": "on"}
    )
    response = client.post(reverse("checks:test-create", args=[test_set.pk]), data)
    test = Test.objects.get(test_set=test_set)
    assert response["Location"] == test.get_absolute_url()
    version = test.current_version
    assert version.number == 1 and version.samples_per_scenario == 2
    assert version.scenarios[0]["messages"] == [{"role": "user", "content": "Where is EC-1042?"}]
    assert [m["role"] for m in version.scenarios[1]["messages"]] == ["user", "assistant", "user"]
    assert version.scenarios[1]["metadata"] == {"tier": "gold"}
    assert [(c.library_check_id, c.required) for c in version.attached_checks.order_by("position")] == [
        (library[0].pk, True),
        (library[1].pk, False),
    ]


def test_over_the_sample_limit_is_rejected_naming_the_field_and_keeping_input(login, member, test_set):
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]), _builder(samples_per_scenario="6")
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "2 scenarios × 6 samples = 12 is over the limit of 10 samples per run" in html
    assert 'name="samples_per_scenario" id="id_samples_per_scenario" value="6"' in html
    assert "I want a refund" in html and "Which order?" in html and 'value="Order status"' in html
    assert not Test.objects.exists()


def test_scenario_errors_land_on_their_row(login, member, test_set):
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]),
        _builder(**{"s-0-input": "   ", "s-1-metadata": "{oops"}),
    )
    html = response.content.decode()
    assert "is not valid JSON" in html  # the page's own parse error, before calling the service
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]), _builder(**{"s-0-input": "  "})
    )
    assert "a scenario needs an input message" in response.content.decode()
    assert not Test.objects.exists()


def test_live_counter_shows_scenarios_times_samples_against_the_limit(login, member, test_set):
    client = login(member)
    url = reverse("checks:test-create", args=[test_set.pk])
    html = client.post(url, _builder(_action="count", samples_per_scenario="5"), **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="builder-counter"')
    assert "2 scenarios × 5 samples = 10 of 10" in html and "over" not in html.split(">", 2)[1]
    html = client.post(
        url, _builder(_action="count", samples_per_scenario="6", min_valid_per_scenario="9"), **HTMX
    ).content.decode()
    assert "= 12 of 10" in html and "counter over" in html
    assert "over the limit of 10 samples per run" in html
    html = client.post(
        url, _builder(_action="count", samples_per_scenario="2", min_valid_per_scenario="3"), **HTMX
    ).content.decode()
    assert "Minimum valid: must be between 1 and the samples per scenario (2)" in html


def test_add_and_remove_scenarios_messages_and_checks_in_place(login, member, test_set, library):
    client = login(member)
    url = reverse("checks:test-create", args=[test_set.pk])
    html = client.post(
        url, _builder(_action="add_scenario"), HTTP_HX_TARGET="builder", **HTMX
    ).content.decode()
    assert html.lstrip().startswith('<div id="builder">')
    assert 'name="scenario_count" value="3"' in html and "autofocus" in html
    html = client.post(url, _builder(_action="remove_scenario:0"), **HTMX).content.decode()
    assert 'name="scenario_count" value="1"' in html and "Where is EC-1042?" not in html
    html = client.post(url, _builder(_action="add_message:1"), **HTMX).content.decode()
    assert 'name="s-1-msg_count" value="4"' in html
    html = client.post(url, _builder(_action="remove_message:1:1"), **HTMX).content.decode()
    assert "Which order?" not in html and 'name="s-1-msg_count" value="2"' in html
    html = client.post(
        url, _builder(_action="add_check", add_check=str(library[1].pk), add_check_advisory="on"), **HTMX
    ).content.decode()
    assert (
        f'name="c-0-id" value="{library[1].pk}"' in html
        and 'name="c-0-advisory" id="id_c-0-advisory" checked' in html
    )
    html = client.post(
        url, _builder(_action="remove_check:0", check_count="1", **{"c-0-id": str(library[1].pk)}), **HTMX
    ).content.decode()
    assert 'name="check_count" value="0"' in html
    html = client.post(url, _builder(_action="refresh", **{"s-0-mode": "chat"}), **HTMX).content.decode()
    assert 'name="s-0-m-0-content"' in html and "Where is EC-1042?" in html  # the input became message 1
    assert not Test.objects.exists()


def test_add_scenario_stops_at_the_limit(login, member, test_set, settings):
    settings.EVALCONSOLE_MAX_SCENARIOS = 2
    html = (
        login(member)
        .post(reverse("checks:test-create", args=[test_set.pk]), _builder(_action="add_scenario"), **HTMX)
        .content.decode()
    )
    assert 'name="scenario_count" value="2"' in html
    assert "At the limit of 2 scenarios per test" in html


def test_editing_saves_a_new_version_and_keeps_the_old(login, member, test_set, library):
    test = create_test(test_set=test_set, by=member, name="T", scenarios=["hello"], checks=[library[0].pk])
    client = login(member)
    html = client.get(reverse("checks:test-edit", args=[test.pk])).content.decode()
    assert (
        "hello" in html and f'name="c-0-id" value="{library[0].pk}"' in html and "Save as version 2" in html
    )
    data = {
        "name": "T",
        "scenario_count": "1",
        "s-0-mode": "single",
        "s-0-input": "hello again",
        "check_count": "1",
        "c-0-id": str(library[0].pk),
        "samples_per_scenario": "1",
        "min_valid_per_scenario": "1",
        "required_pass_rate": "80",
    }
    assert client.post(reverse("checks:test-edit", args=[test.pk]), data).status_code == 302
    test.refresh_from_db()
    assert test.version == 2 and test.current_version.required_pass_rate == 80
    assert test.versions.get(number=1).scenarios[0]["input"] == "hello"
    page = client.get(test.get_absolute_url()).content.decode()
    assert "v2" in page and "hello again" in page


def test_viewer_cannot_build_and_sees_no_buttons(login, viewer, member, test_set):
    test = create_test(test_set=test_set, by=member, name="T", scenarios=["hello"])
    client = login(viewer)
    refused = client.get(reverse("checks:test-create", args=[test_set.pk]))
    assert refused.status_code == 403 and "Viewers cannot build tests." in refused.content.decode()
    assert client.post(reverse("checks:test-create", args=[test_set.pk]), _builder()).status_code == 403
    refused = client.post(reverse("checks:test-edit", args=[test.pk]), _builder())
    assert refused.status_code == 403 and "Viewers cannot edit tests." in refused.content.decode()
    assert (
        client.post(reverse("checks:testset-create", args=[test_set.agent_id]), {"name": "X"}).status_code
        == 403
    )
    page = client.get(test.get_absolute_url()).content.decode()
    assert "Edit test" not in page and "Run this test" not in page
    assert "New test" not in client.get(test_set.get_absolute_url()).content.decode()
    assert Test.objects.count() == 1 and TestSet.objects.count() == 1


def test_another_teams_tests_are_404(login, outsider, member, test_set):
    test = create_test(test_set=test_set, by=member, name="T", scenarios=["hello"])
    client = login(outsider)
    for url in (
        test.get_absolute_url(),
        test_set.get_absolute_url(),
        reverse("checks:test-edit", args=[test.pk]),
        reverse("checks:test-create", args=[test_set.pk]),
    ):
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("checks:test-edit", args=[test.pk]), _builder()).status_code == 404
    assert client.get(reverse("checks:testset-list"), {"agent": test_set.agent_id}).status_code == 404
    assert "Orders" not in client.get(reverse("checks:testset-list")).content.decode()


def test_duplicate_test_set_name_is_an_inline_error(login, member, test_set):
    response = login(member).post(
        reverse("checks:testset-create", args=[test_set.agent_id]),
        {"name": "Orders", "description": "typed text"},
    )
    html = response.content.decode()
    assert "already has a test set called" in html and "typed text" in html


def _field_errors(html: str, name: str) -> list[str]:
    """The messages in the error list of the builder field whose input is `id_<name>`."""
    start = html.index(f'id="id_{name}"')
    block = html[start : html.index("</div>", start)]
    return re.findall(r"<li>(.*?)</li>", block)


def test_every_invalid_threshold_is_reported_at_once_each_once_on_its_field(login, member, test_set):
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]),
        _builder(samples_per_scenario="6", min_valid_per_scenario="9", required_pass_rate="0"),
    )
    html = response.content.decode()
    assert response.status_code == 200
    expected = {
        "samples_per_scenario": "2 scenarios × 6 samples = 12 is over the limit of 10 samples per run",
        "min_valid_per_scenario": "must be between 1 and the samples per scenario (6)",
        "required_pass_rate": "must be between 1 and 100 (%)",
    }
    for field, message in expected.items():
        assert _field_errors(html, field) == [message], field
        assert html.count(message) == 1, field
    assert not Test.objects.exists()


def test_a_parse_error_does_not_hide_the_other_fields_problems(login, member, test_set):
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]),
        _builder(name="", required_pass_rate="0", **{"s-0-input": "  ", "s-1-metadata": "{oops"}),
    )
    html = response.content.decode()
    assert _field_errors(html, "name") == ["a test needs a name"]
    assert _field_errors(html, "s-0-input") == ["a scenario needs an input message"]
    assert _field_errors(html, "required_pass_rate") == ["must be between 1 and 100 (%)"]
    assert html.count("is not valid JSON") == 1
    assert not Test.objects.exists()


def test_a_check_id_beyond_the_database_range_is_not_in_the_library(login, member, test_set):
    # Used to be a 500 (OverflowError: Python int too large to convert to SQLite INTEGER).
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]), _builder(check_count="1", **{"c-0-id": "9" * 30})
    )
    assert response.status_code == 200
    assert f"check {'9' * 30} is not in Support bot" in response.content.decode()
    assert not Test.objects.exists()


DEEP_METADATA = '{"a": ' * 5000 + "1" + "}" * 5000


def test_deeply_nested_metadata_is_an_error_on_its_field_not_a_500(client, member, test_set):
    client.raise_request_exception = False
    client.force_login(member)
    response = client.post(
        reverse("checks:test-create", args=[test_set.pk]), _builder(**{"s-1-metadata": DEEP_METADATA})
    )
    assert response.status_code == 200
    assert _field_errors(response.content.decode(), "s-1-metadata") == ["is nested more than 32 levels deep"]
    assert not Test.objects.exists()


@pytest.mark.parametrize("field", ["name", "s-0-name", "s-0-input", "s-1-m-0-content", "s-1-metadata"])
def test_nul_characters_are_refused_as_the_api_refuses_them(login, member, test_set, field):
    value = '{"note": "a\\u0000b"}' if field == "s-1-metadata" else "a\x00b"
    url = reverse("checks:test-create", args=[test_set.pk])
    response = login(member).post(url, _builder(**{field: value}))
    assert response.status_code == 200
    html = response.content.decode()
    assert "must not contain NUL characters" in html
    assert html.count("must not contain NUL characters") == 1
    assert not Test.objects.exists()


def test_editing_a_test_names_an_archived_check_at_the_top_and_in_its_row(login, admin_user, member,
                                                                          test_set, library):
    from checks.services import archive_check

    test = create_test(test_set=test_set, by=member, name="T", scenarios=["hello"], checks=[library[0].pk])
    archive_check(check=library[0], by=admin_user, confirm=True)
    client = login(member)
    url = reverse("checks:test-edit", args=[test.pk])
    html = client.get(url).content.decode()
    top = html.split('<div id="builder">')[1].split("<fieldset")[0]
    assert 'id="archived-checks"' in top and "Mentions order" in top  # said before saving
    data = {
        "name": "T2", "scenario_count": "1", "s-0-mode": "single", "s-0-input": "hello",
        "check_count": "1", "c-0-id": str(library[0].pk),
        "samples_per_scenario": "1", "min_valid_per_scenario": "1", "required_pass_rate": "100",
    }
    response = client.post(url, data)
    html = response.content.decode()
    assert response.status_code == 200
    top = html.split('<div id="builder">')[1].split("<fieldset")[0]
    assert 'class="errorbox"' in top and "Mentions order" in top and "is archived" in top
    row = html.split('data-check="Mentions order"')[1].split("</tr>")[0]
    assert '<span class="tag warn">archived</span>' in row and "is archived" in row
    test.refresh_from_db()
    assert test.version == 1
    # Removing the archived check lets the edit through.
    data.update(check_count="0")
    assert client.post(url, data).status_code == 302


# ---------------------------------------------------------------- + New check in the builder (issue 14: 25)


def _new_check(**fields):
    return {"nc_open": "1", "nc-name": "Looked up", "nc-kind": "tool_usage", "cfg-tool": "lookup_order",
            "cfg-mode": "at_least", "cfg-count": "1", "cfg-inputs-count": "0", "cfg-node": "", **fields}


def test_new_check_opens_in_place_and_keeps_the_builder(login, member, test_set):
    client = login(member)
    url = reverse("checks:test-create", args=[test_set.pk])
    html = client.post(url, _builder(_action="new_check"), HTTP_HX_TARGET="builder", **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="builder">')
    panel = html.split('id="new-check"')[1]
    assert 'name="nc-name"' in panel and 'name="nc-kind"' in panel and 'id="new-check-fields"' in panel
    assert "Where is EC-1042?" in html and 'value="Order status"' in html  # what was typed stays
    # Picking a kind swaps that kind's fields in; the builder still keeps everything.
    html = client.post(url, _builder(_action="nc:kind", **_new_check()), **HTMX).content.decode()
    fields = html.split('id="new-check-fields"')[1]
    assert 'data-kind="tool_usage"' in fields and 'name="cfg-tool"' in fields and "Input conditions" in fields
    html = client.post(url, _builder(_action="nc:add:inputs", **_new_check()), **HTMX).content.decode()
    assert 'name="cfg-inputs-0-field"' in html and 'value="Looked up"' in html
    # Other builder actions keep the open panel and what was typed in it.
    html = client.post(url, _builder(_action="add_scenario", **_new_check()), **HTMX).content.decode()
    assert 'name="scenario_count" value="3"' in html and 'value="lookup_order"' in html
    assert not Check.objects.exists() and not Test.objects.exists()


def test_new_check_is_validated_by_the_service_and_errors_stay_in_the_panel(login, member, test_set):
    response = login(member).post(
        reverse("checks:test-create", args=[test_set.pk]),
        _builder(_action="nc:save", **_new_check(**{"nc-name": "", "cfg-count": "1" + "0" * 30})),
        **HTMX,
    )
    panel = response.content.decode().split('id="new-check"')[1].split('id="builder-counter"')[0]
    assert response.status_code == 200
    assert "a check needs a name" in panel and "must be at most 1,000" in panel
    assert "Where is EC-1042?" in response.content.decode()
    assert not Check.objects.exists()


def test_new_check_is_saved_to_the_library_and_attached(login, member, test_set, agent):
    client = login(member)
    url = reverse("checks:test-create", args=[test_set.pk])
    html = client.post(url, _builder(_action="nc:save", **_new_check(**{"nc-advisory": "on"})), **HTMX)
    html = html.content.decode()
    check = Check.objects.get()
    assert (check.agent, check.name, check.kind, check.version) == (agent, "Looked up", "tool_usage", 1)
    assert check.current_version.config["tool"] == "lookup_order"
    assert f'name="c-0-id" value="{check.pk}"' in html
    assert 'name="c-0-advisory" id="id_c-0-advisory" checked' in html
    assert 'id="new-check"' not in html and "Looked up created in the library and attached" in html
    assert "Where is EC-1042?" in html
    # It is a library check like any other: the test saves with it, the Checks tab lists it.
    data = _builder(check_count="1", **{"c-0-id": str(check.pk), "c-0-advisory": "on"})
    assert client.post(url, data).status_code == 302
    attached = Test.objects.get().current_version.attached_checks.all()
    assert [(c.library_check_id, c.required) for c in attached] == [(check.pk, False)]
    library = client.get(reverse("checks:check-list", args=[agent.pk])).content.decode()
    assert check.get_absolute_url() in library


def test_saving_the_test_with_an_unfinished_new_check_asks_to_finish_it(login, member, test_set):
    response = login(member).post(reverse("checks:test-create", args=[test_set.pk]), _builder(**_new_check()))
    html = response.content.decode()
    assert response.status_code == 200 and not Test.objects.exists()
    assert "Create and attach the new check, or cancel it, before saving the test" in html
    assert 'value="lookup_order"' in html


def test_new_check_at_the_check_limit_is_disabled(login, member, test_set, library, settings):
    settings.EVALCONSOLE_MAX_CHECKS = 1
    data = _builder(check_count="1", **{"c-0-id": str(library[0].pk)})
    url = reverse("checks:test-create", args=[test_set.pk])
    html = login(member).post(url, {**data, "_action": "refresh"}, **HTMX).content.decode()
    button = html.split('value="new_check"')[1].split(">")[0]
    assert "disabled" in button


def test_an_archived_test_set_offers_no_new_test_or_launch_and_refuses_both(
    login, member, admin_user, test_set
):
    from checks.services import archive_test_set
    from runs.models import Run

    test = create_test(test_set=test_set, by=member, name="Kept", scenarios=["hi"])
    archive_test_set(test_set=test_set, by=admin_user)
    client = login(member)
    html = client.get(test_set.get_absolute_url()).content.decode()
    assert '<span class="tag warn">archived</span>' in html
    assert reverse("checks:test-create", args=[test_set.pk]) not in html and "Run all tests" not in html
    assert f"?test={test.pk}" not in html  # no Run button per test either
    assert "Run this test" not in client.get(test.get_absolute_url()).content.decode()

    message = "test set &#x27;Orders&#x27; is archived; restore it to add tests"
    url = reverse("checks:test-create", args=[test_set.pk])
    page = client.get(url)
    assert page.status_code == 200 and message in page.content.decode()
    response = client.post(url, _builder())
    html = response.content.decode()
    assert response.status_code == 200 and message in html
    assert 'id="id_test_set_error"' in html  # on the test set field, not lost
    assert not Test.objects.filter(name="Order status").exists()

    launch = reverse("runs:run-launch")
    refused = "test set &#x27;Orders&#x27; is archived; restore it to launch its tests"
    assert refused in client.get(launch, {"test": test.pk}).content.decode()
    for body in ({"test": test.pk}, {"test_set": test_set.pk}):
        response = client.post(launch, body)
        assert response.status_code == 200, body
        assert "is archived; restore it to launch" in response.content.decode(), body
    assert not Run.objects.exists()
