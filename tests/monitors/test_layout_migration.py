"""A database from before the monitors/ and teams/ apps existed migrates with every row intact."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("agents", "0002_agent_concurrency_window"),
    ("checks", "0001_initial"),
    ("evalconsole", "0002_judge_usage"),
    ("runs", "0002_recover_runs_schedule"),
    ("teams", None),
    ("monitors", None),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state([t for t in targets if t[1]]).apps


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _seed(apps):
    """Rows of every moved model, written through the models as they were before the move."""
    User = apps.get_model("auth", "User")
    Team = apps.get_model("agents", "Team")
    user = User.objects.create(username="old-timer")
    team = Team.objects.create(name="Acme", slug="acme", judge_monthly_token_budget=1234)
    apps.get_model("agents", "Membership").objects.create(team=team, user=user, role="admin")
    apps.get_model("evalconsole", "ApiToken").objects.create(
        user=user, name="ci", key_id="k1", digest="d" * 64
    )
    apps.get_model("evalconsole", "JudgeUsage").objects.create(team=team, month="2026-11-01", tokens_in=7)
    agent = apps.get_model("agents", "Agent").objects.create(team=team, name="bot", endpoint_url="http://a/")
    check = apps.get_model("checks", "Check").objects.create(agent=agent, name="polite", kind="text_includes")
    version = apps.get_model("checks", "CheckVersion").objects.create(
        parent=check, number=1, name="polite", kind="text_includes", config={"text": "please"}
    )
    tasks = [
        apps.get_model("agents", "Task").objects.create(
            agent=agent,
            external_id=f"t{i}",
            output=f"out {i}",
            completed_at=f"2026-11-0{i + 1}T10:00:00Z",
            sampled=True,
        )
        for i in range(3)
    ]
    monitor = apps.get_model("runs", "Monitor").objects.create(agent=agent, name="live", sample_rate=50)
    monitor.checks.add(check)
    evaluation = apps.get_model("runs", "Evaluation").objects.create(agent=agent, name="once")
    evaluation.tasks.add(*tasks[:2])
    evaluation.check_versions.add(version)
    Result = apps.get_model("runs", "CheckResult")
    for task in tasks:
        Result.objects.create(check_version=version, task=task, monitor=monitor, outcome="pass")
    Result.objects.create(check_version=version, task=tasks[0], evaluation=evaluation, outcome="fail")
    return {
        "team": team.pk,
        "monitor": monitor.pk,
        "evaluation": evaluation.pk,
        "tasks": [t.pk for t in tasks],
    }


@pytest.mark.django_db(transaction=True)
def test_moved_models_keep_their_rows_relations_and_content_types():
    try:
        old_apps = _migrate(BEFORE)
        ids = _seed(old_apps)
        task_type = ContentType.objects.get(app_label="agents", model="task")  # moved back by the down step

        apps = _migrate(_latest())
        Task = apps.get_model("monitors", "Task")
        assert sorted(Task.objects.values_list("pk", flat=True)) == ids["tasks"]
        assert list(Task.objects.order_by("pk").values_list("external_id", "output")) == [
            ("t0", "out 0"), ("t1", "out 1"), ("t2", "out 2")
        ]
        monitor = apps.get_model("monitors", "Monitor").objects.get(pk=ids["monitor"])
        assert [c.name for c in monitor.checks.all()] == ["polite"]
        assert monitor.results.count() == 3
        evaluation = apps.get_model("monitors", "Evaluation").objects.get(pk=ids["evaluation"])
        assert sorted(evaluation.tasks.values_list("pk", flat=True)) == ids["tasks"][:2]
        assert list(evaluation.results.values_list("outcome", flat=True)) == ["fail"]
        team = apps.get_model("teams", "Team").objects.get(pk=ids["team"])
        assert team.judge_monthly_token_budget == 1234
        assert list(team.memberships.values_list("user__username", "role")) == [("old-timer", "admin")]
        assert apps.get_model("teams", "ApiToken").objects.get().digest == "d" * 64
        assert apps.get_model("teams", "JudgeUsage").objects.get().tokens_in == 7
        # The content type moved with the model: same id, so permissions and admin log entries follow.
        task_type.refresh_from_db()
        assert (task_type.app_label, task_type.model) == ("monitors", "task")

        # And back down again, then up: the move is reversible.
        _migrate(BEFORE)
        ContentType.objects.clear_cache()
        task_type.refresh_from_db()
        assert task_type.app_label == "agents"
        apps = _migrate(_latest())
        assert apps.get_model("monitors", "Task").objects.count() == 3
    finally:
        _migrate(_latest())
        ContentType.objects.clear_cache()
