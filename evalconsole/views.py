"""Console-level pages: home, team switcher, API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from agents.models import Team
from evalconsole import services
from evalconsole.errors import DomainError
from evalconsole.forms import TokenForm
from evalconsole.middleware import SESSION_KEY
from evalconsole.models import ApiToken


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("agents:agent-list")


@require_POST
@login_required
def switch_team(request: HttpRequest) -> HttpResponse:
    team = get_object_or_404(Team.objects.visible_to(request.user), pk=request.POST.get("team"))
    request.session[SESSION_KEY] = team.pk
    return redirect(request.POST.get("next") or "home")


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_secret = None
    if request.method == "POST" and form.is_valid():
        try:
            issued = services.issue_token(user=request.user, **form.cleaned_data)
        except DomainError as exc:
            for field, message in exc.errors.items():
                form.add_error(None if field == "__all__" else field, message)
        else:
            new_secret = issued.secret
            form = TokenForm()
    tokens = ApiToken.objects.visible_to(request.user).order_by("-created_at")[:200]
    return render(request, "tokens/token_list.html", {"form": form, "tokens": tokens, "new_secret": new_secret})


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.visible_to(request.user), pk=pk)
    services.revoke_token(token=token, by=request.user)
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("token-list")
