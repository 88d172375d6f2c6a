"""The team page: members and this month's AI judge usage; team admins edit the judge budget."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from core.errors import DomainError
from teams import access, services
from teams.budget import judge_usage_summary
from teams.forms import JudgeBudgetForm
from teams.models import JudgeUsage, Team

HISTORY_MONTHS = 12


@login_required
def team_detail(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """`team/` shows the current team; `team/<pk>/` a team the user belongs to (others are 404)."""
    if pk is None:
        team = getattr(request, "team", None)
        if not team:
            raise Http404("you are not a member of any team")
        team = Team.objects.get(pk=team.pk)
    else:
        team = get_object_or_404(Team.objects.visible_to(request.user), pk=pk)
    can_edit = access.allows(request.user, access.CHANGE, team)

    initial = {"judge_monthly_token_budget": team.judge_monthly_token_budget}
    form = JudgeBudgetForm(request.POST or None, initial=initial)
    if request.method == "POST":
        if form.is_valid():
            try:
                services.set_judge_budget(team=team, by=request.user,
                                          tokens=form.cleaned_data["judge_monthly_token_budget"])
            except DomainError as exc:
                for field, message in exc.errors.items():
                    form.add_error(None if field == "__all__" else field, message)
            else:
                messages.success(request, "Judge budget saved.")
                return redirect(request.path)
        status = 403 if not can_edit else 200
    else:
        status = 200

    context = {
        "team": team,
        "can_edit": can_edit,
        "form": form,
        "usage": judge_usage_summary(team),
        "history": JudgeUsage.objects.filter(team=team).order_by("-month")[:HISTORY_MONTHS],
        "memberships": team.memberships.select_related("user").order_by("user__username"),
    }
    return render(request, "teams/team_detail.html", context, status=status)
