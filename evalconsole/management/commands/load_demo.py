"""`manage.py load_demo`: the demo team, its admin, the demo support agent, checks and a passing test,
and the demo scenes, each with a test that plays it and a sloppy variant that fails (the demo agent
makes its mistakes on a scene whose name says "sloppy"): worlds/scenes/support-export.yaml (Slack and
GitHub), worlds/scenes/support-triage.yaml (the same tools with people: the customer, an engineer and
a manager) and worlds/scenes/orders-5xx.yaml (an incident in Datadog, PagerDuty, GitHub and Slack).

`make up` runs it every time. The demo is created once, with the demo team (slug ``demo``): while that
team exists, its agent, checks, test sets, tests and members are the team's own and are left exactly as
they are (renamed, archived, edited or deleted). Only the ``admin`` user is made again if it is missing,
so that `make up` can still print a login, and a demo scene the team never had (one that came with a
newer evalconsole) is added once.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

import worlds
from agents.models import Agent
from agents.services import create_agent
from checks.services import create_check, create_test, create_test_set
from teams.models import Team
from teams.services import add_member, create_team, get_or_create_user
from worlds.models import Scene
from worlds.services import create_scene, create_scene_test

SCENES = Path(worlds.__file__).parent / "scenes"
# Each demo scene: its file, the test set that holds its tests, the test's name, and the set's description.
DEMO_SCENES = {
    "support-export": (
        SCENES / "support-export.yaml",
        "Support in Slack and GitHub",
        "Answer and file a bug",
        "Scenes: the agent works in a simulated Slack and GitHub; checks judge what really happened.",
    ),
    "support-triage": (
        SCENES / "support-triage.yaml",
        "Support with people",
        "Triage with Laura, Ben and Mike",
        "Scenes with people: checks read who was asked, who learned what from whom and who decided what.",
    ),
    "orders-5xx": (
        SCENES / "orders-5xx.yaml",
        "Incident response",
        "Orders 5xx after a deploy",
        "Scenes: a fault breaks production; checks read Datadog, PagerDuty and GitHub, in simulated time.",
    ),
}

DEMO_CHECKS = [
    ("Mentions the order id", "text_includes", {"text": "EC-1042"}),
    ("Looks up the order", "tool_usage", {"tool": "lookup_order", "mode": "at_least", "count": 1}),
    ("Never issues a refund", "tool_usage", {"tool": "issue_refund", "mode": "at_most", "count": 0}),
    ("Escalates refunds", "tool_usage", {"tool": "escalate_to_human", "mode": "at_least", "count": 1}),
]


class Command(BaseCommand):
    help = "Load the demo team, admin user, demo agent, checks and test set (once; then it changes nothing)."

    def add_arguments(self, parser):
        parser.add_argument("--agent-url", default="http://127.0.0.1:8001/")

    def handle(self, *args, **options):
        password_file = settings.VAR_DIR / "admin_password"
        with transaction.atomic():
            admin, created = get_or_create_user(username="admin", email="admin@example.com", superuser=True)
            if created:
                password = secrets.token_urlsafe(12)
                admin.set_password(password)
                admin.save(update_fields=["password"])
                settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
                password_file.write_text(password + "\n")
                password_file.chmod(0o600)
            team = Team.objects.filter(slug="demo").first()
            if team is None:
                self._create_demo(admin, agent_url=options["agent_url"])
                loaded = "Demo loaded."
            else:
                loaded = f"Demo team {team.name!r} is there already; left as it is."
                added = self._add_world_demo(team, admin)  # a demo loaded before these scenes existed
                if added:
                    loaded += f" Added the demo scenes: {', '.join(added)}."
        password = (
            password_file.read_text().strip()
            if password_file.exists()
            else "(set before; see var/admin_password)"
        )
        self.stdout.write(f"{loaded} Log in as admin / {password}")

    def _create_demo(self, admin, *, agent_url: str) -> None:
        team = create_team(name="Demo", slug="demo")
        add_member(team=team, user=admin, role="admin")
        agent = create_agent(
            team=team, by=admin, name="Demo support agent", endpoint_url=agent_url,
            description="A deterministic support agent shipped with evalconsole "
            "(python -m agents.demo_agent).",
        )
        checks = {
            name: create_check(agent=agent, by=admin, name=name, kind=kind, config=config)
            for name, kind, config in DEMO_CHECKS
        }
        test_set = create_test_set(
            agent=agent, by=admin, name="Support basics", description="Order status and refund handling."
        )
        create_test(
            test_set=test_set, by=admin, name="Order status",
            scenarios=[
                {"name": "Where is my order", "input": "Where is my order EC-1042?"},
                {"name": "Status, politely", "input": "Hi! Could you check the status of order EC-1042?"},
            ],
            checks=[{"check": checks["Mentions the order id"].pk, "required": True},
                    {"check": checks["Looks up the order"].pk, "required": True}],
            samples_per_scenario=2, min_valid_per_scenario=2, required_pass_rate=100,
        )
        create_test(
            test_set=test_set, by=admin, name="Refund requests",
            scenarios=[{"name": "Refund", "input": "I want a refund for order EC-1042, it arrived broken."}],
            checks=[{"check": checks["Never issues a refund"].pk, "required": True},
                    {"check": checks["Escalates refunds"].pk, "required": True}],
            samples_per_scenario=1,
        )
        self._create_world_demo(admin, agent)

    def _add_world_demo(self, team, admin) -> list[str]:
        """The demo scenes a demo team never had, on its first active agent: for a demo loaded before
        scenes (or these scenes) existed, and only while every scene the team ever had is a demo scene
        (scenes are archived, never deleted): a team that wrote scenes of its own gets none."""
        agent = Agent.objects.filter(team=team, archived_at__isnull=True).order_by("pk").first()
        if agent is None:
            return []
        demo_names = {n for name in DEMO_SCENES for n in (name, f"{name}-sloppy")}
        had = set(Scene.objects.filter(agent__team=team).values_list("name", flat=True))
        if had - demo_names:
            return []
        missing = [name for name in DEMO_SCENES if not had & {name, f"{name}-sloppy"}]
        for name in missing:
            self._create_scene_demo(admin, agent, name)
        return missing

    def _create_world_demo(self, admin, agent) -> None:
        for name in DEMO_SCENES:
            self._create_scene_demo(admin, agent, name)

    def _create_scene_demo(self, admin, agent, name: str) -> None:
        path, set_name, test_name, description = DEMO_SCENES[name]
        text = path.read_text()
        good = create_scene(agent=agent, by=admin, source=text)
        sloppy = create_scene(
            agent=agent,
            by=admin,
            source=text.replace(f"scene: {name}\n", f"scene: {name}-sloppy\n", 1).replace(
                "description: ", "description: (The demo agent is sloppy here, so this one fails.) ", 1
            ),
        )
        test_set = create_test_set(agent=agent, by=admin, name=set_name, description=description)
        create_scene_test(test_set=test_set, by=admin, name=test_name, scenes=[good.pk])
        create_scene_test(test_set=test_set, by=admin, name="Sloppy variant (fails)", scenes=[sloppy.pk])
