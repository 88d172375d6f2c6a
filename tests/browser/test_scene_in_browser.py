"""A scene from paste to trace in a real browser, through the test builder: open it in scene mode from
the test set, paste a scene, see the problem on its line as you type, fix it, add it to the library and
attach it, save the test, launch, watch the run finish (a real qcluster worker; the agent works in the
world over HTTP), open a sample and read its world's trace."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from checks.services import create_test_set
from tests.support.scenes import support_question
from tests.support.world_agent import WorldAgent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOOD = support_question(description="A customer asks why her CSV export never arrives.")
# a typo on line 15 of the text (the answered check)
TYPO = GOOD.replace("channel: $slack_support, from: $slack_bot", "channel: $slak_support, from: $slack_bot")


def test_paste_a_scene_fix_it_run_it_and_read_the_trace(
    page: Page, live_server, log_in, shot, team, admin_user, member, qcluster_factory
):
    from tests import factories

    qcluster_factory(env={"EVALCONSOLE_WORLDS_URL": live_server.url})
    with WorldAgent("slack_answer") as agent_server:
        agent = factories.agent(team, admin_user, name="Support bot", endpoint_url=agent_server.url)
        test_set = create_test_set(agent=agent, by=member, name="Support")
        log_in("alice", "pw-alice")

        # -- the test set's "New scene test" opens the test builder in scene mode
        page.goto(f"{live_server.url}/checks/test-sets/{test_set.pk}/")
        page.get_by_role("link", name="New scene test").click()
        expect(page.locator("#id_mode_scenes")).to_be_checked()
        expect(page.locator("#builder-scenarios")).to_be_hidden()
        page.locator("#id_name").fill("Export question")

        # -- paste a scene with a typo: the problem shows on its line as you type
        page.locator("#id_source").fill(TYPO)
        problems = page.locator("#scene-problems")
        expect(problems).to_contain_text("line 15")
        expect(problems).to_contain_text("unknown ref $slak_support")
        expect(page.locator("ol.source li#L15")).to_have_class("bad")
        shot("scene-error")

        # -- fix it: valid as you type; add it to the library and attach it
        page.locator("#id_source").fill(GOOD)
        expect(page.locator("#scene-problems")).to_contain_text("The scene is valid: 2 checks, tools slack.")
        page.get_by_role("button", name="Add to library and attach").click()
        expect(page.locator("#scene-notice")).to_contain_text(
            "Scene export-question is in Support bot's library"
        )
        expect(page.get_by_label("export-question")).to_be_checked()
        expect(page.locator("#id_source")).to_have_value("")
        shot("scene")

        # -- the test that plays it
        page.locator("#id_samples_per_scenario").fill("2")
        page.locator("#id_min_valid_per_scenario").fill("2")
        expect(page.locator("#builder-counter")).to_contain_text("1 scene × 2 samples = 2 of")
        page.locator("#save-test").click()
        expect(page.locator(".msg")).to_contain_text("plays 1 scene")

        # -- launch it and watch it finish
        page.get_by_role("link", name="Run this test").click()
        page.get_by_role("button", name="Launch run").click()
        page.wait_for_url(re.compile(r".*/runs/\d+/$"))
        expect(page.locator("#run-percent")).to_have_text("100 %", timeout=60_000)
        expect(page.locator("#run-result")).to_have_text("pass")
        expect(page.locator("details.sample")).to_have_count(2)

        # -- open a sample: the scene's checks, evidence linked to the world's trace
        sample = page.locator("details.sample").first
        sample.locator(":scope > summary").click()
        answered = sample.locator(".scene-check[data-check='answered']")
        expect(answered).to_have_attribute("data-outcome", "passed")
        trace = sample.locator("table.world-trace")
        expect(trace.locator("tbody tr")).to_have_count(3)
        expect(trace).to_contain_text("/api/chat.postMessage")
        answered.locator("a.evidence").first.click()
        expect(trace.locator("tr[data-seq='3']")).to_be_in_viewport()
        expect(sample.locator(".world-changes")).to_contain_text("Exports are back.")
        shot("scene-run")


def test_upload_a_scene_file_in_the_builder(
    page: Page, live_server, log_in, team, admin_user, member, tmp_path
):
    from tests import factories

    agent = factories.agent(team, admin_user, name="Support bot")
    test_set = create_test_set(agent=agent, by=member, name="Support")
    bad, good = tmp_path / "bad.yaml", tmp_path / "export.yaml"
    bad.write_bytes(b"\xff\xfe not text")
    good.write_text(GOOD)
    log_in("alice", "pw-alice")
    page.goto(f"{live_server.url}/checks/test-sets/{test_set.pk}/tests/new/?mode=scenes")

    page.locator("#id_upload").set_input_files(str(bad))
    page.get_by_role("button", name="Add to library and attach").click()
    expect(page.locator("#id_upload_error")).to_have_text("the file is not UTF-8 text")

    page.locator("#id_upload").set_input_files(str(good))
    page.get_by_role("button", name="Add to library and attach").click()
    expect(page.locator("#scene-notice")).to_contain_text("Scene export-question is in Support bot's library")
    expect(page.get_by_label("export-question")).to_be_checked()
    page.locator("#id_name").fill("Uploaded")
    page.locator("#save-test").click()
    expect(page.locator(".msg")).to_contain_text("Test Uploaded saved as version 1; it plays 1 scene.")
