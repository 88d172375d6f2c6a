"""`manage.py load_demo`: the demo team, its admin, the demo support agent, checks and a passing test,
and the demo scene (worlds/scenes/support-export.yaml) with a test that plays it and a sloppy variant
that fails (the demo agent makes its mistakes on a scene whose name says "sloppy").

`make up` runs it every time. The demo is created once, with the demo team (slug ``demo``): while that
team exists, its agent, checks, test sets, tests and members are the team's own and are left exactly as
they are (renamed, archived, edited or deleted). Only the ``admin`` user is made again if it is missing,
so that `make up` can still print a login.
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

DEMO_SCENE = Path(worlds.__file__).parent / "scenes" / "support-export.yaml"

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
                if self._add_world_demo(team, admin):  # a demo loaded before scenes existed
                    loaded += " Added the demo scenes."
        password = (
            password_file.read_text().strip() if password_file.exists() else "(set before; see var/admin_password)"
        )
        self.stdout.write(f"{loaded} Log in as admin / {password}")

    def _create_demo(self, admin, *, agent_url: str) -> None:
        team = create_team(name="Demo", slug="demo")
        add_member(team=team, user=admin, role="admin")
        agent = create_agent(
            team=team, by=admin, name="Demo support agent", endpoint_url=agent_url,
            description="A deterministic support agent shipped with evalconsole (python -m agents.demo_agent).",
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

    def _add_world_demo(self, team, admin) -> bool:
        """The world demo for a demo team loaded before scenes existed: only while the team has never
        had a scene (scenes are archived, never deleted), and only on its demo agent if still active."""
        if Scene.objects.filter(agent__team=team).exists():
            return False
        agent = Agent.objects.filter(team=team, archived_at__isnull=True).order_by("pk").first()
        if agent is None:
            return False
        self._create_world_demo(admin, agent)
        return True

    def _create_world_demo(self, admin, agent) -> None:
        text = DEMO_SCENE.read_text()
        good = create_scene(agent=agent, by=admin, source=text)
        sloppy = create_scene(
            agent=agent,
            by=admin,
            source=text.replace("scene: support-export\n", "scene: support-export-sloppy\n", 1).replace(
                "description: ", "description: (The demo agent is sloppy here, so this one fails.) ", 1
            ),
        )
        test_set = create_test_set(
            agent=agent, by=admin, name="Support in Slack and GitHub",
            description="Scenes: the agent works in a simulated Slack and GitHub; checks judge what really happened.",
        )
        create_scene_test(test_set=test_set, by=admin, name="Answer and file a bug", scenes=[good.pk])
        create_scene_test(test_set=test_set, by=admin, name="Sloppy variant (fails)", scenes=[sloppy.pk])
