"""Review services: sending (bounded), labels per reviewer and version, calibration, promoting examples."""

from __future__ import annotations

import pytest

from checks import kinds
from checks.kinds import Context, Evidence
from checks.models import Check
from checks.services import edit_check
from core.errors import PermissionDenied, ValidationFailed
from reviews import calibration, services
from reviews.models import Label, ReviewItem
from tests import factories


def items(queue):
    return list(ReviewItem.objects.filter(queue=queue).order_by("position"))


def version_of(check, number):
    return check.versions.get(number=number)


def test_send_samples_of_a_run_filtered_by_check_and_outcome(queue, member, make_run, judge_check):
    run = make_run(["pass", "fail", "fail", "pass"])
    sent = services.send_samples(queue=queue, run=run, by=member, check=judge_check, outcome="fail")
    assert (sent.added, sent.already) == (2, 0)
    assert [i.sample.sample_index for i in items(queue)] == [1, 2]
    again = services.send_samples(queue=queue, run=run, by=member, check=judge_check)  # every judged sample
    assert (again.added, again.already) == (2, 2)
    assert [i.position for i in items(queue)] == [1, 2, 3, 4]
    assert services.send_samples(queue=queue, run=run, by=member, outcome="pass").added == 0


def test_a_send_is_bounded_and_says_so(queue, member, make_run, monkeypatch):
    monkeypatch.setattr(services, "MAX_ITEMS_PER_SEND", 3)
    run = make_run(["fail"] * 4)
    with pytest.raises(ValidationFailed) as refused:
        services.send_samples(queue=queue, run=run, by=member)
    assert "more than 3 samples match; a send adds at most 3 items" in refused.value.errors["samples"]
    assert items(queue) == []


def test_nothing_matching_is_an_error_naming_it(queue, member, make_run):
    run = make_run(["pass"])
    with pytest.raises(ValidationFailed, match="no sample matches"):
        services.send_samples(queue=queue, run=run, by=member, outcome="error")


def test_send_tasks_by_id_and_another_teams_task_does_not_exist(queue, member, agent, other_team, outsider):
    tasks = [factories.task(agent, external_id=f"T-{i}", output=f"out {i}") for i in range(3)]
    sent = services.send_tasks(queue=queue, by=member, task_ids=[t.pk for t in tasks[:2]])
    assert sent.added == 2 and {i.task_id for i in items(queue)} == {tasks[0].pk, tasks[1].pk}
    theirs = factories.task(factories.agent(other_team, outsider), external_id="X")
    with pytest.raises(ValidationFailed, match=f"task {theirs.pk} does not exist"):
        services.send_tasks(queue=queue, by=member, task_ids=[theirs.pk])


def test_viewers_read_but_do_not_send_or_label(queue, viewer, member, make_run, judge_check):
    run = make_run(["pass"])
    with pytest.raises(PermissionDenied):
        services.send_samples(queue=queue, run=run, by=viewer)
    services.send_samples(queue=queue, run=run, by=member)
    with pytest.raises(PermissionDenied):
        services.label_item(
            item=items(queue)[0], check_version=version_of(judge_check, 1), by=viewer, verdict="pass"
        )


def test_a_reviewer_edits_their_own_label_and_two_reviewers_label_one_item(
    queue, member, team, make_run, judge_check
):
    services.send_samples(queue=queue, run=make_run(["pass"]), by=member)
    item, v1 = items(queue)[0], version_of(judge_check, 1)
    services.label_item(item=item, check_version=v1, by=member, verdict="pass", note="fine")
    services.label_item(item=item, check_version=v1, by=member, verdict="fail", note="rude at the end")
    other = factories.member_of(team, "member", "bea")
    services.label_item(item=item, check_version=v1, by=other, verdict="pass")
    labels = {lab.reviewer.username: (lab.verdict, lab.note) for lab in Label.objects.filter(item=item)}
    assert labels == {"alice": ("fail", "rude at the end"), "bea": ("pass", "")}


@pytest.mark.parametrize(
    ("verdict", "note", "field"),
    [
        ("maybe", "", "verdict"),
        ("pass", "x" * 2001, "note"),
        ("fail", "a\x00b", "note"),
    ],
)
def test_bad_labels_name_the_field(queue, member, make_run, judge_check, verdict, note, field):
    services.send_samples(queue=queue, run=make_run(["pass"]), by=member)
    with pytest.raises(ValidationFailed) as refused:
        services.label_item(
            item=items(queue)[0],
            check_version=version_of(judge_check, 1),
            by=member,
            verdict=verdict,
            note=note,
        )
    assert field in refused.value.errors


def test_a_label_needs_a_result_of_that_version(queue, member, make_run, judge_check, agent):
    services.send_samples(queue=queue, run=make_run(["pass"]), by=member)
    unrelated = factories.check(agent, member, name="Other")
    with pytest.raises(ValidationFailed, match="has no result of Other v1"):
        services.label_item(
            item=items(queue)[0], check_version=unrelated.current_version, by=member, verdict="pass"
        )


def label_all(queue, member, judge_check, verdicts, number=1):
    version = version_of(judge_check, number)
    for item, verdict in zip(items(queue), verdicts, strict=True):
        services.label_item(item=item, check_version=version, by=member, verdict=verdict)


def test_calibration_judge_first_people_second(queue, member, team, make_run, judge_check):
    # judge: pass pass fail fail pass; people: pass fail fail pass pass
    services.send_samples(
        queue=queue, run=make_run(["pass", "pass", "fail", "fail", "pass", "error"]), by=member
    )
    label_all(queue, member, judge_check, ["pass", "fail", "fail", "pass", "pass", "fail"])
    figures = calibration.calibrate(version_of(judge_check, 1))
    assert figures.as_dict() == {
        "check": judge_check.pk,
        "version": 1,
        "labels": 5,
        "agreement": 60.0,
        "kappa": pytest.approx(1 / 6),
        "confusion": {"pass_pass": 2, "pass_fail": 1, "fail_pass": 1, "fail_fail": 1},
        "not_compared": 1,
        "inter_reviewer": {"items": 0, "agreement": None, "kappa": None},
    }
    assert sorted(lab.item.position for lab in figures.disagreements) == [2, 4]
    # a second reviewer on two items: inter-reviewer agreement over those
    bea = factories.member_of(team, "member", "bea")
    first, second = items(queue)[:2]
    services.label_item(item=first, check_version=version_of(judge_check, 1), by=bea, verdict="pass")
    services.label_item(item=second, check_version=version_of(judge_check, 1), by=bea, verdict="pass")
    assert calibration.calibrate(version_of(judge_check, 1)).as_dict()["inter_reviewer"] == {
        "items": 2,
        "agreement": 50.0,
        "kappa": 0.0,
    }


def test_one_class_only_has_no_kappa(queue, member, make_run, judge_check):
    services.send_samples(queue=queue, run=make_run(["pass", "pass"]), by=member)
    label_all(queue, member, judge_check, ["pass", "pass"])
    figures = calibration.calibrate(version_of(judge_check, 1)).as_dict()
    assert (figures["labels"], figures["agreement"], figures["kappa"]) == (2, 100.0, None)


def test_labels_survive_a_new_check_version_which_starts_its_own_figures(
    queue, member, make_run, judge_check
):
    services.send_samples(queue=queue, run=make_run(["pass", "fail"]), by=member)
    label_all(queue, member, judge_check, ["pass", "pass"])
    edit_check(check=judge_check, by=member, config={"prompt": "The agent is polite and brief."})
    assert Check.objects.get(pk=judge_check.pk).version == 2
    v1 = calibration.calibrate(version_of(judge_check, 1)).as_dict()
    v2 = calibration.calibrate(version_of(judge_check, 2)).as_dict()
    assert (v1["labels"], v1["agreement"]) == (2, 50.0)
    assert (v2["labels"], v2["agreement"], v2["kappa"]) == (0, None, None)
    assert Label.objects.filter(check_version__number=1).count() == 2


def test_promoting_a_disagreement_saves_a_judge_version_whose_prompt_shows_it(
    queue, member, make_run, judge_check
):
    services.send_samples(
        queue=queue, run=make_run(["pass", "pass"], conversation="whatever, go away"), by=member
    )
    item = items(queue)[1]
    services.label_item(
        item=item, check_version=version_of(judge_check, 1), by=member, verdict="fail", note="Dismissive"
    )
    label = Label.objects.get(item=item)
    saved = services.promote_examples(check=judge_check, labels=[label], by=member)
    assert saved.version == 2
    examples = saved.current_version.config["examples"]
    assert examples == [
        {
            "conversation": "Conversation (oldest first):\nuser: question 1\n\nFinal output of the "
            "agent:\n<<<\nwhatever, go away 1\n>>>",
            "verdict": "fail",
            "reason": "Dismissive",
        }
    ]
    assert label.check_version.number == 1  # the label stays with the version it was made on

    class Judge:
        def complete(self, *, model, messages, estimated_tokens=0):
            self.messages = messages
            return kinds.judging.JudgeReply(
                text='{"verdict": "fail", "reason": "Rude."}',
                tokens_in=1,
                tokens_out=1,
                latency_ms=1.0,
                model=model,
            )

    judge = Judge()
    verdict = kinds.evaluate(
        "ai_judge",
        saved.current_version.config,
        Evidence(output="go away"),
        Context(judge=judge, cache={}, settings={"judge_model": "m"}),
    )
    shown = verdict.details["judge"]["prompt"][0]["content"]  # the run page shows this prompt
    assert "Example 1: verdict fail (Dismissive)" in shown and "whatever, go away 1" in shown


def test_promoting_refuses_other_kinds_and_too_many(queue, member, make_run, judge_check, agent, monkeypatch):
    services.send_samples(queue=queue, run=make_run(["pass"]), by=member)
    label = services.label_item(
        item=items(queue)[0], check_version=version_of(judge_check, 1), by=member, verdict="fail"
    )
    plain = factories.check(agent, member, name="Plain")
    with pytest.raises(ValidationFailed, match="only an AI judge check has examples"):
        services.promote_examples(check=plain, labels=[label], by=member)
    monkeypatch.setattr(services, "MAX_EXAMPLES", 0)
    with pytest.raises(ValidationFailed, match="at most 0 examples"):
        services.promote_examples(check=judge_check, labels=[label], by=member)
