"""`manage.py create_api_token USERNAME [--read-only] [--expires DAYS] [--name NAME]`: prints only the
token."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.errors import DomainError
from teams import services


class Command(BaseCommand):
    help = "Create a personal API token for USERNAME and print it (only the token, for scripts)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--read-only", action="store_true", help="The token can only read.")
        parser.add_argument("--expires", type=int, metavar="DAYS", help="Expire after DAYS days.")
        parser.add_argument("--name", default="command line", help="A name to recognise the token by.")

    def handle(self, *args, **options):
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"username: no user called {options['username']!r}")
        try:
            issued = services.issue_token(
                user=user, name=options["name"], can_write=not options["read_only"],
                expires_in_days=options["expires"],
            )
        except DomainError as exc:
            field = "expires" if "expires_in_days" in exc.errors else next(iter(exc.errors))
            raise CommandError(f"{field}: {next(iter(exc.errors.values()))}") from exc
        self.stdout.write(issued.secret)
