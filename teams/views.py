"""Console-level pages: home, team switcher, API tokens."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from core.errors import DomainError, Rejected
from core.views import apply_errors, forbidden
from teams import services
from teams.access import page_flags
from teams.forms import TokenForm
from teams.middleware import SESSION_KEY
from teams.models import ApiToken, Team


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("agents:agent-list")


@require_POST
@login_required
def switch_team(request: HttpRequest) -> HttpResponse:
    team = get_object_or_404(Team.objects.visible_to(request.user), pk=request.POST.get("team"))
    request.session[SESSION_KEY] = team.pk
    # Back to the same section of the console (object pages may belong to the previous team).
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return redirect("home")
    section = "/" + target.lstrip("/").split("/", 1)[0] + "/" if target.strip("/") else "/"
    return redirect(section)


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
    tokens = ApiToken.objects.visible_to(request.user).order_by("-created_at", "-id")
    page = Paginator(tokens, 50).get_page(request.GET.get("page"))
    context = {"form": form, "tokens": page.object_list, "page": page, "new_secret": new_secret}
    return render(request, "tokens/token_list.html", context)


@require_POST
@login_required
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.visible_to(request.user), pk=pk)
    services.revoke_token(token=token, by=request.user)
    messages.success(request, f"Token {token.name} revoked.")
    return redirect("token-list")


# ---------------------------------------------------------------- helpers shared by the console pages


def saved_or_errors(request: HttpRequest, form, save, *, message, errors=apply_errors) -> HttpResponse | None:
    """A valid form's POST, `save()` being its service call: a redirect to what it returns with `message`
    (a text, or a function of what it returns) flashed; or None with the service's errors put on `form` by
    `errors(form, exc)`, for the view to show it again. A refusal is not the form's: it goes on to
    core.views.RefusalMiddleware (the 403 page)."""
    try:
        saved = save()
    except Rejected as exc:
        errors(form, exc)
        return None
    messages.success(request, message(saved) if callable(message) else message)
    return redirect(saved)


def archive_or_restore(
    request: HttpRequest, obj, archive, *, note: str = "", archived_to=None
) -> HttpResponse:
    """POST to an object's archive page (`restore=1` restores) through its service, e.g.
    `archive_agent(agent=, by=, archived=)`, then "Agent <name> archived<note>." (or "restored.") and the
    object's page (`archived_to` once archived, when given)."""
    restore = request.POST.get("restore") == "1"
    archive(**{obj._meta.model_name: obj}, by=request.user, archived=not restore)
    noun = obj._meta.verbose_name.capitalize()
    if restore:
        messages.success(request, f"{noun} {obj.name} restored.")
        return redirect(obj)
    messages.success(request, f"{noun} {obj.name} archived{note}.")
    return redirect(archived_to or obj)


def viewer_refusal(request: HttpRequest, team, action: str) -> HttpResponse | None:
    """The 403 page "Viewers cannot <action>." when the user may only read `team`'s objects; None when
    they may change them."""
    if page_flags(request.user, team)["can_edit"]:
        return None
    return forbidden(request, f"Viewers cannot {action}.")


def edit_refusal(request: HttpRequest, obj) -> HttpResponse | None:
    """Why the user may not open `obj`'s edit page (a library object with an agent): the 403 page for a
    viewer, or back to the object's page when it is archived; None when they may."""
    noun = obj._meta.verbose_name
    refusal = viewer_refusal(request, obj.agent.team, f"edit {obj._meta.verbose_name_plural}")
    if refusal is not None:
        return refusal
    if obj.archived_at is not None:
        messages.error(request, f"This {noun} is archived; restore it before editing.")
        return redirect(obj)
    return None
