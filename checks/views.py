"""The check library (Checks tab per agent), test sets and the test builder."""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Lower
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.backends.utils import csrf_input
from django.template.defaultfilters import pluralize
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from agents.models import Agent
from checks import kinds, scene_mode, services
from checks.forms import (
    CheckConfigForm,
    CheckForm,
    CheckRow,
    CheckSearchForm,
    NewTestSetForm,
    TestBuilder,
    int_or_text,
)
from checks.judge import judge_configured
from checks.models import Check, CheckVersion, Test, TestCheck, TestSet, TestVersion
from core.errors import DomainError, Rejected, ValidationFailed
from core.htmx import page_or_fragment, target_fragment
from core.ids import MAX_ID
from core.listing import parse_search, parse_sort
from core.templatetags.names import esc, local_time, trunc, truncate
from core.urls import RowUrls, plain_url
from core.views import (
    apply_errors,
    count_related,
    count_subquery,
    flag_param,
    forbidden,
    newest_related,
    reverse_model,
    table_row,
)
from teams.access import page_flags
from teams.views import archive_or_restore, edit_refusal, saved_or_errors, viewer_refusal

PAGE_SIZE = 50
JUDGE_KIND = "ai_judge"  # skipped (indeterminate) on every sample while no judge key is configured
USED_FILTERS = {"in_tests": "In tests", "in_monitors": "In dashboard", "unused": "Unused"}
# The check list's sortable columns (within each kind group); the primary key breaks ties.
CHECK_COLUMNS = {
    "name": (Lower("name"),),
    "version": ("version",),
    "used": ("test_count", "monitor_count"),
    "updated": ("updated_at",),
}


def _agent_for(request: HttpRequest, pk: int) -> Agent:
    return get_object_or_404(Agent.objects.visible_to(request.user).select_related("team"), pk=pk)


def _kind_labels() -> dict[str, str]:
    return dict(kinds.kind_choices())


def config_summary(config: dict, limit: int = 140) -> str:
    """One line of a config for lists: the fields that are set."""
    parts = []
    for key, value in config.items():
        if value in (None, "", [], {}):
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}: {text}")
    line = " · ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------- the check library



def _runs():
    """Run, read through the relation runs declare towards tests (runs sit on the floor above)."""
    return reverse_model(Test, "runs")


def _last_run() -> dict:
    """Annotations of tests: their newest run's id, result and status."""
    return newest_related(Test, "runs", last_run_id="pk", last_run_result="result", last_run_status="status")


def _use_counts() -> dict:
    """Annotations of checks: test_count (active tests whose current version attaches the check) and
    monitor_count (active monitors)."""
    return {
        "test_count": count_subquery(
            TestCheck,
            "library_check",
            test_version__test__current_version=F("test_version"),
            test_version__test__archived_at__isnull=True,
        ),
        "monitor_count": count_related(Check, "monitors", active=True),
    }


LIBRARY_PAGE_SIZE = 50
# What _library_row reads of a check (with _use_counts()).
LIBRARY_ROW_COLUMNS = (
    *("id", "name", "kind", "version", "archived_at", "updated_at", "agent_id", "agent__name"),
    *("test_count", "monitor_count"),
)


def _usage(tests: int, monitors: int) -> str:
    parts = [f"{tests} test{pluralize(tests)}"] if tests else []
    parts += [f"{monitors} dashboard{pluralize(monitors)}"] if monitors else []
    return " · ".join(parts) or '<span class="muted">unused</span>'


# The URL formers of the rows, made once a page.
LibraryUrls = functools.partial(RowUrls, check="checks:check-detail", agent_checks="checks:check-list")


def _library_row(c: tuple, kind_label: str, urls: RowUrls) -> SafeString:
    """One row of the check library (a LIBRARY_ROW_COLUMNS tuple), as the template would draw it (50 a
    page: Python, not the engine)."""
    pk, name, _, number, archived_at, updated_at, agent_id, agent_name, tests, monitors = c
    archived = ' <span class="tag warn">archived</span>' if archived_at else ""
    updated = local_time(updated_at, "Y-m-d H:i")
    return table_row(
        f'<td><a href="{esc(urls.check(pk))}"><strong>{trunc(name)}</strong></a>{archived}</td>',
        f'<td><a href="{esc(urls.agent_checks(agent_id))}">{trunc(agent_name)}</a></td>',
        f'<td class="small">{esc(kind_label)}</td>',
        f"<td>v{number}</td>",
        f'<td class="small">{_usage(tests, monitors)}</td>',
        f'<td class="small muted">{esc(updated)}</td>',
        attrs=f' class="check-row" data-check="{esc(name)}"',
    )


@login_required
def check_index(request: HttpRequest) -> HttpResponse:
    """The Checks menu entry: the check library of every agent of the current team, with search."""
    team = request.team
    archived, filter_error = flag_param(request, "archived")
    agents = Agent.objects.visible_to(request.user).filter(team=team).order_by("name", "pk")
    raw_agent = request.GET.get("agent", "")
    an_id = raw_agent.isascii() and raw_agent.isdigit()
    if an_id and int(raw_agent) > MAX_ID:
        raise Http404("No such agent in this team.")
    form = CheckSearchForm(request.GET or None, agents=agents)
    valid = not form.is_bound or form.is_valid()
    if not valid and "agent" in form.errors and an_id:
        raise Http404("No such agent in this team.")  # another team's agent: as if it did not exist
    checks = (
        Check.objects.visible_to(request.user)
        .filter(agent__team=team, archived_at__isnull=not archived)
        .annotate(**_use_counts())
        .order_by("agent__name", "agent_id", "kind", "name", "pk")
    )
    if not valid or filter_error:
        checks = checks.none()  # say what is wrong rather than show an unfiltered list
    elif form.is_bound:
        checks = form.filter(checks)
    checks = checks.values_list(*LIBRARY_ROW_COLUMNS)
    page = Paginator(checks, LIBRARY_PAGE_SIZE).get_page(request.GET.get("page"))
    labels = _kind_labels()
    urls = LibraryUrls()
    rows = [{"row": _library_row(c, labels.get(c[2], c[2]), urls)} for c in page.object_list]
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "checks": rows,
        "team": team,
        "archived": archived,
        "filter_error": filter_error,
        "query": query.urlencode(),
        "searched": any(query.get(k) for k in ("q", "kind", "agent")),
    }
    status = 400 if filter_error or not valid else 200
    return render(request, "checks/check_library.html", context, status=status)


# What a row of an agent's Checks tab reads of a check (with _use_counts()).
CHECK_ROW_COLUMNS = (
    *("id", "name", "kind", "version", "archived_at", "updated_at", "current_version__config"),
    *("test_count", "monitor_count"),
)


def _check_row(c: tuple, *, restore_form: str | None, urls) -> SafeString:
    """One row of an agent's Checks tab (a CHECK_ROW_COLUMNS tuple), as checks/check_list.html drew it (50
    a page: Python, not the engine). `restore_form` is the Restore button's form (with the CSRF input) with
    "{url}" for the check's archive URL, for admins; None for everyone else. `urls` is a ChecksUrls."""
    pk, name, _, number, archived_at, updated_at, config, tests, monitors = c
    if archived_at:
        when = f"archived {esc(local_time(archived_at, 'Y-m-d H:i'))}"
        if restore_form is not None:
            when += restore_form.format(url=esc(urls.archive(pk)))
        when += "\n            "
    else:
        when = esc(local_time(updated_at, "Y-m-d H:i"))
    summary = config_summary(config if config is not None else {})  # None: no current version
    return table_row(
        f'<td><a href="{esc(urls.check(pk))}"><strong>{trunc(name)}</strong></a></td>',
        f"<td>v{number}</td>",
        f'<td class="small"><code>{esc(summary)}</code></td>',
        f'<td class="small">{_usage(tests, monitors)}</td>',
        f'<td class="small muted">{when}</td>',
        attrs=f' class="check-row" data-check="{esc(name)}"',
        indent=8,
        tail=6,
    )


# The URL formers of the rows, made once a page.
ChecksUrls = functools.partial(RowUrls, check="checks:check-detail", archive="checks:check-archive")


def _restore_form(request: HttpRequest) -> str:
    return (
        '\n            <form method="post" action="{url}">'
        + str(csrf_input(request)).replace("{", "{{").replace("}", "}}")
        + '<input type="hidden" name="restore" value="1">'
        + '<button type="submit" class="small">Restore</button></form>'
    )


@login_required
def check_list(request: HttpRequest, agent_pk: int) -> HttpResponse:
    agent = _agent_for(request, agent_pk)
    search, search_error = parse_search(request.GET.get("q"))
    sort = parse_sort(request.GET.get("sort"), CHECK_COLUMNS, default="name")
    archived, filter_error = flag_param(request, "archived")
    agent_checks = Check.objects.visible_to(request.user).filter(agent=agent).search(search)
    library = agent_checks.active()
    used = request.GET.get("used", "")
    if used not in USED_FILTERS or archived:
        used = ""
    counts = agent_checks.usage_counts()
    listed = agent_checks.filter(archived_at__isnull=False) if archived else library.used(used)
    checks = (
        listed
        .annotate(**_use_counts())
        .order_by(*sort.order_by("kind"))  # grouped by kind, sorted within each group
        .values_list(*CHECK_ROW_COLUMNS)
    )
    page = Paginator(checks, PAGE_SIZE).get_page(request.GET.get("page"))
    labels = _kind_labels()
    listed_rows = list(page.object_list)
    flags = page_flags(request.user, agent.team)
    archived_rows = any(c[4] for c in listed_rows)
    restore_form = _restore_form(request) if flags["can_admin"] and archived_rows else None
    urls = ChecksUrls()
    rows = [
        {"kind_label": labels.get(c[2], c[2]), "row": _check_row(c, restore_form=restore_form, urls=urls)}
        for c in listed_rows
    ]
    # The rows by kind as the template's {% regroup checks by kind_label %} grouped them (runs of equal
    # labels), without the engine resolving each row's label.
    groups = [
        {"grouper": label, "list": list(members)}
        for label, members in itertools.groupby(rows, key=lambda row: row["kind_label"])
    ]
    keep = request.GET.copy()  # the filter links keep the search and the sort
    for name in ("used", "archived", "page"):
        keep.pop(name, None)
    archived_href = f"?{keep.urlencode()}&archived=1" if keep else "?archived=1"
    filters = []
    for key, label in [("", "All"), *USED_FILTERS.items()]:
        if key:
            keep["used"] = key
        else:
            keep.pop("used", None)
        rest = keep.urlencode()
        filters.append((key, label, counts[key or "all"], f"?{rest}" if rest else ""))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "agent": agent,
        "tab": "checks",
        "page": page,
        "checks": rows,
        "groups": groups,
        "filters": filters,
        "used": used,
        "query": query.urlencode(),
        "search": search,
        "search_error": search_error,
        "sort": sort,
        "sorts": sort.headers(request.GET),
        "archived": archived,
        "archived_count": counts["archived"],
        "archived_href": archived_href,
        "filter_error": filter_error,
        **flags,
    }
    return page_or_fragment(
        request,
        "checks/check_list.html",
        target_fragment(request, ["checks-panel"]),
        context,
        status=400 if filter_error else 200,
    )


def _check_form_context(request, *, agent, form, config_form, check=None) -> dict:
    kind_obj = config_form.kind
    return {
        "agent": agent,
        "check": check,
        "form": form,
        "config_form": config_form,
        "kind": kind_obj,
        "kinds": kinds.all_kinds(),
        "tab": "checks",
        "judge_missing": kind_obj.name == JUDGE_KIND and not judge_configured(),
    }


def _kind_or_default(name: str | None, fallback: str | None = None) -> kinds.Kind:
    for candidate in (name, fallback):
        if candidate:
            try:
                return kinds.get_kind(candidate)
            except KeyError:
                pass
    return kinds.all_kinds()[0]


def _edit_check_form(request: HttpRequest, *, agent: Agent, check: Check | None) -> HttpResponse:
    """Create and edit share this: GET shows the form (an HTMX GET swaps the kind's fields), a POST
    with `_action` edits list rows in place, a plain POST saves through the service."""
    template = "checks/check_form.html"
    current = check.current_version if check else None
    if request.method == "GET":
        asked = request.GET.get("kind")
        kind_obj = _kind_or_default(asked, current.kind if current else None)
        same_kind = current is not None and kind_obj.name == current.kind
        initial = {"name": current.name, "kind": kind_obj.name} if current else {"kind": kind_obj.name}
        form = CheckForm(initial=initial)
        config_form = CheckConfigForm(kind_obj, initial=current.config if same_kind else None)
        context = _check_form_context(request, agent=agent, form=form, config_form=config_form, check=check)
        return page_or_fragment(request, template, target_fragment(request, ["config-fields"]), context)

    form = CheckForm(request.POST)
    kind_obj = _kind_or_default(request.POST.get("kind"), current.kind if current else None)
    action = request.POST.get("_action", "")
    config_form = CheckConfigForm(kind_obj, data=request.POST, action=action)
    context = _check_form_context(request, agent=agent, form=form, config_form=config_form, check=check)
    if action:  # add/remove a list row: nothing is saved
        return page_or_fragment(request, template, "config-fields", context)
    config = config_form.parse()
    if form.is_valid() and not config_form.has_errors:
        name = form.cleaned_data["name"]
        try:
            if check is None:
                saved = services.create_check(
                    agent=agent, by=request.user, name=name, kind=kind_obj.name, config=config
                )
            else:
                saved = services.edit_check(
                    check=check, by=request.user, name=name, kind=kind_obj.name, config=config
                )
        except Rejected as exc:
            _spread_check_errors(form, config_form, exc)
        else:
            return _said_saved(request, saved, check, created=f"Check {saved.name} created (version 1).",
                               new_version=f"Saved {saved.name} as version {saved.version}.")
    elif config_form.has_errors:
        # Show every problem at once: the service reports the fields that did parse.
        try:
            services.validate_check(name=request.POST.get("name", ""), kind=kind_obj.name, config=config)
        except ValidationFailed as exc:
            _spread_check_errors(form, config_form, exc)
    return render(request, template, context)


def _spread_check_errors(form: CheckForm, config_form: CheckConfigForm, exc: DomainError) -> None:
    top = {k: v for k, v in exc.errors.items() if not (k == "config" or k.startswith("config."))}
    config_form.add_errors({k: v for k, v in exc.errors.items() if k not in top})
    if top:
        apply_errors(form, DomainError(top))


@login_required
def check_create(request: HttpRequest, agent_pk: int) -> HttpResponse:
    agent = _agent_for(request, agent_pk)
    return viewer_refusal(request, agent.team, "add checks") or _edit_check_form(
        request, agent=agent, check=None
    )


def _check_for(request: HttpRequest, pk: int) -> Check:
    return get_object_or_404(
        Check.objects.visible_to(request.user).select_related("agent__team", "current_version", "created_by"),
        pk=pk,
    )


def _said_saved(request: HttpRequest, saved, before, *, created: str, new_version: str) -> HttpResponse:
    """After saving a versioned object (``before`` is None for a new one): the message that says whether it
    was made, saved as a new version or left as it was, and a redirect to it."""
    if before is None:
        messages.success(request, created)
    elif saved.version != before.version:
        messages.success(request, new_version)
    else:
        messages.info(request, "Nothing changed, so no new version was made.")
    return redirect(saved)


@login_required
def check_edit(request: HttpRequest, pk: int) -> HttpResponse:
    check = _check_for(request, pk)
    return edit_refusal(request, check) or _edit_check_form(request, agent=check.agent, check=check)


VERSIONS_PER_PAGE = 20


@login_required
def check_detail(request: HttpRequest, pk: int) -> HttpResponse:
    check = _check_for(request, pk)
    versions_qs = (
        CheckVersion.objects.filter(parent=check)
        .select_related("created_by")
        .annotate(run_count=count_related(CheckVersion, "run_checks"))
        .order_by("-number")
    )
    page = Paginator(versions_qs, VERSIONS_PER_PAGE).get_page(request.GET.get("page"))
    versions = list(page.object_list)
    # The version just below this page, to diff the page's oldest one against.
    older = None
    if versions and versions[-1].number > 1:
        older = (
            CheckVersion.objects.filter(parent=check, number__lt=versions[-1].number)
            .order_by("-number")
            .first()
        )
    chain = versions + ([older] if older else [])
    labels = _kind_labels()
    history = []
    for index, version in enumerate(versions):
        previous = chain[index + 1] if index + 1 < len(chain) else None
        history.append(
            {
                "version": version,
                "kind_label": labels.get(version.kind, version.kind),
                "changes": [
                    {"field": name, "before": _show(before), "after": _show(after)}
                    for name, before, after in services.version_diff(previous, version)
                ],
                "config": _show(version.config),
            }
        )
    tests = (
        Test.objects.using_check(check)
        .select_related("test_set", "current_version")
        .order_by("name", "pk")[:50]
    )
    monitors = check.monitors.filter(active=True).order_by("name")[:50]
    # The latest runs that used any version of this check (attached or picked at launch).
    runs = (
        _runs().objects.visible_to(request.user)
        .filter(run_checks__check_version__parent=check)
        .annotate(
            check_version_used=Subquery(
                reverse_model(CheckVersion, "run_checks").objects.filter(
                    run=OuterRef("pk"), check_version__parent=check
                ).values(
                    "check_version__number"
                )[:1]
            )
        )
        .select_related("test", "test_version")
        .distinct()
        .order_by("-created_at", "-id")[:10]
    )
    context = {
        "check": check,
        "runs": runs,
        "agent": check.agent,
        "tab": "checks",
        "history": history,
        "page": page,
        "kind_label": labels.get(check.kind, check.kind),
        "tests": tests,
        "monitors": monitors,
        **page_flags(request.user, check.agent.team),
    }
    return render(request, "checks/check_detail.html", context)


def _show(value) -> str:
    """A config value as text for the page (auto-escaped by the template)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@require_POST
@login_required
def check_archive(request: HttpRequest, pk: int) -> HttpResponse:
    check = _check_for(request, pk)
    restore = request.POST.get("restore") == "1"
    confirm = request.POST.get("confirm") == "1"
    try:
        services.archive_check(check=check, by=request.user, archived=not restore, confirm=confirm)
    except services.CheckInUse as exc:  # ask first, naming the tests that use it
        context = {"check": check, "agent": check.agent, "tab": "checks", "tests": exc.tests,
                   "kind_label": _kind_labels().get(check.kind, check.kind)}
        return render(request, "checks/check_archive_confirm.html", context)
    text = f"Check {check.name} {'restored' if restore else 'archived'}."
    if not restore and confirm:
        users = [t.name for t in Test.objects.using_check(check).order_by("name", "pk")[:50]]
        if users:
            keep = "keeps" if len(users) == 1 else "keep"
            text += f" {services.names_list(users)} {keep} running v{check.version}."
    messages.success(request, text)
    return redirect(check)


# ---------------------------------------------------------------- test sets


def _last_run_badge(run_id, result, status, never: str, run_url) -> str:
    """A test's newest run as a linked badge (its result, else its status), or `never` (muted);
    `run_url` forms a run's URL (pk_url_former("runs:run-detail"))."""
    if not run_id:
        return f'<span class="muted">{never}</span>'
    shown = esc(result or status)
    return f'<a href="{esc(run_url(run_id))}"><span class="badge {shown}">{shown}</span></a>'


# What the Tests page reads of a test set, and of each of its active tests (with _last_run()).
SET_SECTION_COLUMNS = ("id", "name", "description", "agent_id", "agent__name")
LISTED_TEST_COLUMNS = (
    *("test_set_id", "id", "name", "version", "current_version_id"),
    *("current_version__scenarios", "current_version__samples_per_scenario"),
    *("last_run_id", "last_run_result", "last_run_status"),
)


def _set_sections(sets: list[tuple], *, with_agent: bool, can_edit: bool) -> list[SafeString]:
    """The Tests page's cards of `sets` (SET_SECTION_COLUMNS tuples): their active tests read as tuples in
    one query (none for no sets), then each card drawn by _set_section."""
    tests: dict[int, list[tuple]] = {ts[0]: [] for ts in sets}
    if sets:
        listed = (
            Test.objects.filter(test_set_id__in=list(tests), archived_at__isnull=True)
            .annotate(**_last_run())
            .order_by("name", "pk")
            .values_list(*LISTED_TEST_COLUMNS)
        )
        for t in listed:
            tests[t[0]].append(t)
    urls = set_urls()
    return [
        _set_section(ts, tests[ts[0]], with_agent=with_agent, can_edit=can_edit, urls=urls) for ts in sets
    ]


def set_urls() -> RowUrls:
    """The URL formers of the Tests page's cards and a test set's rows, made once a page."""
    urls = RowUrls(
        agent="agents:agent-detail",
        test_set="checks:testset-detail",
        test="checks:test-detail",
        test_create="checks:test-create",
        run="runs:run-detail",
    )
    urls.launch = esc(plain_url("runs:run-launch"))
    return urls

def _listed_test_row(t: tuple, urls: RowUrls) -> str:
    """One test of a set on the Tests page (a LISTED_TEST_COLUMNS tuple), as checks/testset_list.html
    drew it."""
    _, pk, name, number, version_id, scenarios, samples_each, run_id, result, status = t
    last = _last_run_badge(run_id, result, status, "never run", urls.run)
    return (
        f'\n      <tr><td><a href="{esc(urls.test(pk))}">{trunc(name)}</a></td>'
        f"<td>v{number}</td>"
        f'\n        <td class="num">{len(scenarios or "") if version_id else 0}</td>'
        f'<td class="num">{samples_each if version_id else ""}</td>'
        f"\n        <td>{last}</td></tr>\n    "
    )


def _set_section(
    ts: tuple, tests: list[tuple], *, with_agent: bool, can_edit: bool, urls: RowUrls
) -> SafeString:
    """One test set's card on the Tests page (20 a page, with their tests), as checks/testset_list.html
    drew it: Python, not the engine. `ts` is a SET_SECTION_COLUMNS tuple, `tests` its active tests."""
    pk, name, description, agent_id, agent_name = ts
    agent = ""
    if with_agent:
        agent = f'<a href="{esc(urls.agent(agent_id))}">{trunc(agent_name)}</a> · '
    description = f" · {esc(truncate(description, 100))}" if description else ""
    actions = ""
    if can_edit:
        actions = f'<a class="button small" href="{esc(urls.test_create(pk))}">New test</a>'
        if tests:
            actions += f' <a class="button small" href="{urls.launch}?test_set={pk}">Run all</a>'
    table = ""
    if tests:
        table = (
            '\n  <table class="list">'
            '\n    <thead><tr><th scope="col">Test</th><th scope="col">Version</th>'
            '<th scope="col" class="num">Scenarios</th><th scope="col" class="num">Samples each</th>'
            '<th scope="col">Last run</th></tr></thead>'
            "\n    <tbody>\n    "
            + "".join([_listed_test_row(t, urls) for t in tests])
            + "\n    </tbody>\n  </table>\n  "
        )
    return mark_safe(  # noqa: S308 - every value is escaped above or here
        f'\n<section class="card" aria-labelledby="ts-{pk}">'
        '\n  <div class="pagehead">'
        "\n    <div>"
        f'\n      <h2 id="ts-{pk}" style="margin:0">'
        f'<a href="{esc(urls.test_set(pk))}">{trunc(name)}</a></h2>'
        f'\n      <p class="muted small">{agent}{len(tests)} test{pluralize(len(tests))}{description}</p>'
        "\n    </div>"
        '\n    <div class="actions">'
        f"\n      {actions}"
        "\n    </div>"
        "\n  </div>"
        f"\n  {table}"
        "\n</section>\n"
    )


@login_required
def testset_list(request: HttpRequest) -> HttpResponse:
    """The Tests menu entry: test sets of the current team (or of one agent) with their tests."""
    sets = TestSet.objects.visible_to(request.user).filter(agent__team=request.team, archived_at__isnull=True)
    agent = None
    agent_id = request.GET.get("agent", "")
    if agent_id.isdigit():
        agent = get_object_or_404(Agent.objects.visible_to(request.user).select_related("team"), pk=agent_id)
        sets = TestSet.objects.visible_to(request.user).filter(agent=agent, archived_at__isnull=True)
    sets = sets.order_by("agent__name", "name", "pk").values_list(*SET_SECTION_COLUMNS)
    page = Paginator(sets, 20).get_page(request.GET.get("page"))
    team = agent.team if agent else request.team
    agents = []
    flags = page_flags(request.user, team)
    sections = _set_sections(list(page.object_list), with_agent=agent is None, can_edit=flags["can_edit"])
    test_sets = [{"section": section} for section in sections]
    if flags["can_edit"] and agent is None:
        agents = list(
            Agent.objects.visible_to(request.user)
            .filter(team=team, archived_at__isnull=True)
            .order_by("name")
            .values("pk", "name")[:200]
        )
    options = "".join(f'<option value="{a["pk"]}">{esc(a["name"])}</option>' for a in agents)
    context = {
        "page": page,
        "test_sets": test_sets,
        "agent": agent,
        "agents": agents,
        "agent_options": mark_safe(options),  # noqa: S308 - the names are escaped
        "tab": "tests",
        "query": f"agent={agent.pk}" if agent else "",
        **flags,
    }
    return render(request, "checks/testset_list.html", context)


@login_required
def testset_new(request: HttpRequest) -> HttpResponse:
    """The Tests page's "New test set for <agent>" picker (a plain GET form, no script needed)."""
    raw = request.GET.get("agent", "")
    agent = _agent_for(request, int(raw) if raw.isdigit() else 0)
    return redirect("checks:testset-create", agent_pk=agent.pk)


@login_required
def testset_create(request: HttpRequest, agent_pk: int) -> HttpResponse:
    agent = _agent_for(request, agent_pk)
    if not page_flags(request.user, agent.team)["can_edit"]:
        return forbidden(request, "Viewers cannot create test sets.")
    form = NewTestSetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        done = saved_or_errors(
            request,
            form,
            lambda: services.create_test_set(agent=agent, by=request.user, **form.cleaned_data),
            message=lambda test_set: f"Test set {test_set.name} created. Add its first test.",
        )
        if done is not None:
            return done
    return render(request, "checks/testset_form.html", {"form": form, "agent": agent, "tab": "tests"})


# What a test set's page reads of each of its tests (with check_count, run_count and _last_run()).
SET_TEST_COLUMNS = (
    *("id", "name", "version", "current_version_id", "current_version__scenarios"),
    *("current_version__samples_per_scenario", "current_version__required_pass_rate"),
    *("current_version__min_valid_per_scenario", "check_count", "run_count"),
    *("last_run_id", "last_run_result", "last_run_status"),
)


@login_required
def testset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    test_set = get_object_or_404(
        TestSet.objects.visible_to(request.user).select_related("agent__team"), pk=pk
    )
    tests = (
        Test.objects.filter(test_set=test_set, archived_at__isnull=True)
        .annotate(
            check_count=count_subquery(TestCheck, "test_version", outer="current_version"),
            run_count=count_related(Test, "runs"),
            **_last_run(),
        )
        .order_by("name", "pk")
        .values_list(*SET_TEST_COLUMNS)
    )
    page = Paginator(tests, PAGE_SIZE).get_page(request.GET.get("page"))
    flags = page_flags(request.user, test_set.agent.team)
    launch = escape(plain_url("runs:run-launch")) if flags["can_edit"] and not test_set.archived_at else ""
    urls = set_urls()
    rows = [{"row": _set_test_row(t, launch, urls)} for t in page.object_list]
    context = {
        "test_set": test_set,
        "agent": test_set.agent,
        "tab": "tests",
        "page": page,
        "tests": rows,
        **flags,
    }
    return render(request, "checks/testset_detail.html", context)


def _set_test_row(t: tuple, launch: str, urls: RowUrls) -> SafeString:
    """One row of a test set's tests (a SET_TEST_COLUMNS tuple), as the template would draw it (50 a page:
    Python, not the engine); `launch`: the launch page's URL when the user may run the test, else ""."""
    pk, name, number, version_id, scenarios, samples_each, pass_rate, min_valid, checks, runs = t[:10]
    last = _last_run_badge(*t[10:], "never", urls.run)
    run = f'<a class="button small" href="{launch}?test={pk}">Run</a>' if launch else ""
    shown, total, rule = 0, "", ("", "")
    if version_id:
        shown = len(scenarios or "")
        total, rule = len(scenarios) * samples_each, (pass_rate, min_valid)
    return table_row(
        f'<td><a href="{esc(urls.test(pk))}"><strong>{trunc(name)}</strong></a></td>',
        f"<td>v{number}</td>",
        f'<td class="num">{shown}</td>',
        f'<td class="num">{total}</td>',
        f'<td class="num">{checks or 0}</td>',
        f'<td class="small">≥ {rule[0]} % of ≥ {rule[1]} valid</td>',
        f'<td class="num">{runs or 0}</td>',
        f"<td>{last}</td>",
        f"<td>{run}</td>",
    )


# ---------------------------------------------------------------- tests and the builder


@login_required
def test_detail(request: HttpRequest, pk: int) -> HttpResponse:
    test = get_object_or_404(
        Test.objects.visible_to(request.user).select_related(
            "test_set__agent__team", "current_version", "created_by"
        ),
        pk=pk,
    )
    version = test.current_version
    attached = (
        version.attached_checks.select_related("library_check__current_version").order_by("position")
        if version
        else []
    )
    versions = (
        TestVersion.objects.filter(test=test)
        .select_related("created_by")
        .annotate(run_count=count_related(TestVersion, "runs"))
        .order_by("-number")[:20]
    )
    runs = (
        test.runs.select_related("test_version", "launched_by")
        .order_by("-created_at", "-id")[:10]
    )
    context = {
        "test": test,
        "version": version,
        "attached": attached,
        "versions": versions,
        "runs": runs,
        "agent": test.test_set.agent,
        "tab": "tests",
        **page_flags(request.user, test.test_set.agent.team),
    }
    return render(request, "checks/test_detail.html", context)


def builder_counter(builder: TestBuilder, limits: services.Limits) -> dict:
    """The live "scenarios × samples = N of 10" line and the limit problems found before saving."""
    count = builder.item_count
    noun = "scene" if builder.scenes else "scenario"
    samples = int_or_text(builder.samples_per_scenario)
    total = count * samples if isinstance(samples, int) else None
    problems: list[str] = []
    if count > limits.scenarios and "scenarios" not in builder.errors and "scenes" not in builder.errors:
        problems.append(f"{count} {noun}s is over the limit of {limits.scenarios} per test")
    if len(builder.checks) > limits.checks and "checks" not in builder.errors:
        problems.append(f"{len(builder.checks)} checks is over the limit of {limits.checks} per test")
    try:
        services.validate_thresholds(
            scenario_count=count,
            samples_per_scenario=builder.samples_per_scenario,
            min_valid_per_scenario=builder.min_valid_per_scenario,
            required_pass_rate=builder.required_pass_rate,
            limits=limits,
        )
    except ValidationFailed as exc:
        labels = {
            "samples_per_scenario": "Samples per scenario",
            "min_valid_per_scenario": "Minimum valid",
            "required_pass_rate": "Required pass rate",
        }
        # After a save, a field's own error shows under it; the counter only adds what is not shown.
        problems += [f"{labels.get(k, k)}: {v}" for k, v in exc.errors.items() if k not in builder.errors]
    return {
        "scenarios": count,
        "noun": noun,
        "samples": samples if isinstance(samples, int) else "?",
        "total": total,
        "limit": limits.samples_per_run,
        "over": total is not None and total > limits.samples_per_run,
        "problems": problems,
    }


@dataclass
class NewCheckPanel:
    """The builder's "+ New check" form: a library check created in place, then attached."""

    form: CheckForm  # name and kind, prefixed nc-
    config_form: CheckConfigForm
    advisory: bool = False
    focus: bool = False

    @property
    def judge_missing(self) -> bool:
        return self.config_form.kind.name == JUDGE_KIND and not judge_configured()


UNFINISHED_CHECK = "Create and attach the new check, or cancel it, before saving the test."


def _new_check_panel(data, action: str) -> NewCheckPanel | None:
    """The panel as posted with the builder (open while `nc_open` is sent), or None when closed."""
    if action == "new_check":
        kind = _kind_or_default(None)
        form = CheckForm(initial={"kind": kind.name}, prefix="nc")
        return NewCheckPanel(form, CheckConfigForm(kind), focus=True)
    if data.get("nc_open") != "1" or action == "nc:cancel":
        return None
    kind = _kind_or_default(data.get("nc-kind"))
    if action == "nc:kind":  # another kind: its fields with their defaults, as the check form does
        config_form = CheckConfigForm(kind)
    else:
        rows = action.removeprefix("nc:") if action.startswith(("nc:add:", "nc:remove:")) else ""
        config_form = CheckConfigForm(kind, data=data, action=rows)
    return NewCheckPanel(CheckForm(data, prefix="nc"), config_form, advisory="nc-advisory" in data)


def _create_new_check(request, panel: NewCheckPanel, builder: TestBuilder, agent: Agent) -> Check | None:
    """Save the panel's check to the library (checks.services.create_check) and attach it to the builder.

    Returns the check, or None with the problems on the panel's fields. Raises PermissionDenied."""
    limits = services.Limits.current()
    config = panel.config_form.parse()
    if len(builder.checks) >= limits.checks:
        panel.form.add_error(None, f"This test is at the limit of {limits.checks} checks: remove one first.")
        return None
    kind = panel.config_form.kind.name
    if panel.form.is_valid() and not panel.config_form.has_errors:
        try:
            check = services.create_check(
                agent=agent, by=request.user, name=panel.form.cleaned_data["name"], kind=kind, config=config
            )
        except Rejected as exc:
            _spread_check_errors(panel.form, panel.config_form, exc)
            return None
        builder.checks.append(CheckRow(check_id=check.pk, advisory=panel.advisory))
        return check
    if panel.config_form.has_errors:  # every problem at once: the service checks the fields that parsed
        try:
            services.validate_check(name=request.POST.get("nc-name", ""), kind=kind, config=config)
        except ValidationFailed as exc:
            _spread_check_errors(panel.form, panel.config_form, exc)
    return None


def _builder_response(
    request, *, test_set: TestSet, test: Test | None, builder: TestBuilder, fragment: str | None = None,
    new_check: NewCheckPanel | None = None, notice: str = "", scene_notice: str = "",
) -> HttpResponse:
    limits = services.Limits.current()
    if test is None and test_set.archived_at is not None and "test_set" not in builder.errors:
        builder.add_errors({"test_set": services.archived_test_set_problem(test_set)})  # before typing
    agent = test_set.agent
    ids = builder.attached_ids
    library = list(
        Check.objects.filter(agent=agent).select_related("current_version").order_by("kind", "name", "pk")
    )
    by_id = {c.pk: c for c in library}
    for row in builder.checks:
        row.check = by_id.get(row.check_id)
    # Named at the top as well as in their rows: a new version cannot keep an archived check.
    archived = [row.check.name for row in builder.checks if row.check and row.check.archived_at]
    labels = _kind_labels()
    addable = [c for c in library if c.pk not in ids and c.archived_at is None]
    for c in addable:
        c.kind_label = labels.get(c.kind, c.kind)
    context = {
        "test_set": test_set,
        "test": test,
        "agent": agent,
        "builder": builder,
        "tab": "tests",
        "counter": builder_counter(builder, limits),
        "limits": limits,
        "addable": addable,
        "archived": archived,
        "new_check": new_check,
        "notice": notice,
        "scene_notice": scene_notice,
        "kinds": kinds.all_kinds(),
        "roles": ("user", "assistant", "system", "tool"),
        "action_url": request.path,
        **({} if fragment == "builder-counter" else _scene_context(builder, agent, test)),
    }
    return page_or_fragment(request, "checks/test_builder.html", fragment, context)


def _scene_context(builder: TestBuilder, agent: Agent, test: Test | None) -> dict:
    """The builder's scenes section (checks/scene_mode.py): the library to pick from, and the pasted
    file with every problem on its line (the scene page's validation partial)."""
    mode = scene_mode.provider()
    if mode is None:
        return {"scene_mode": None}
    library = mode.library(agent, keep=builder.scene_ids)
    # The attached scenes first, in the test's order (the checkboxes post them back in that order), then
    # the rest of the library by name.
    order = {pk: i for i, pk in enumerate(builder.scene_ids)}
    library.sort(key=lambda s: (0, order[s.pk]) if s.pk in order else (1, 0))
    known = {s.pk for s in library}
    return {
        "scene_mode": mode,
        "library_scenes": library,
        "unknown_scenes": [pk for pk in builder.scene_ids if pk not in known],
        "mode_locked": test is not None,
        **mode.validation(builder.scene_source),
    }


def _problem_count(message) -> str:
    if isinstance(message, list | tuple):
        return f"{len(message)} problem{'s' if len(message) != 1 else ''} in the scene (see its lines)"
    return str(message)


def _spread_scene_errors(builder: TestBuilder, errors, *, inline: int | None = None) -> None:
    """A scene test's errors on the builder's fields: ``scenes.<i>`` on the pasted file when it is the
    file (its problems also show on their lines), else on the scene picker; the rest as for scenarios."""
    rest = {}
    for key, message in errors.items():
        path = key.split(".")
        if key in ("source", "upload") or (
            path[0] == "scenes" and len(path) > 1 and path[1].isdigit() and int(path[1]) == inline
        ):
            field = "upload" if key == "upload" else "source"
            builder.errors.setdefault(field, []).append(_problem_count(message))
        elif key == "scenes" and str(message).startswith("give a list"):
            builder.errors.setdefault("scenes", []).append(
                "pick a library scene, or paste or upload a scene file"
            )
        elif path[0] in ("scenes", "scenarios"):
            builder.errors.setdefault("scenes", []).append(_problem_count(message))
        else:
            rest[key] = message
    builder.add_errors(rest)


def _add_scene(request, builder: TestBuilder, agent: Agent, mode) -> str:
    """Save the pasted (or uploaded) file to the library and attach it: the notice, or "" with the
    problems on the file's field. Raises PermissionDenied."""
    if "upload" in builder.errors:
        return ""
    if not builder.scene_source.strip():
        builder.errors.setdefault("source", []).append("paste a scene or upload a file first")
        return ""
    try:
        scene = mode.add_to_library(agent=agent, by=request.user, source=builder.scene_source)
    except Rejected as exc:
        _spread_scene_errors(builder, exc.errors)
        return ""
    if scene.pk not in builder.scene_ids:
        builder.scene_ids.append(scene.pk)
    builder.scene_source = ""
    return f"Scene {scene.name} is in {agent.name}'s library (version {scene.version}) and attached."


def _save_scene_test(request, builder: TestBuilder, *, test_set: TestSet, test: Test | None, mode):
    """Save a test that plays scenes (the picked ones, plus the pasted file saved to the library in
    the same transaction): the saved test, or None with every problem on its field."""
    kwargs = builder.service_kwargs()
    kwargs.pop("scenarios")
    scenes: list = list(builder.scene_ids)
    inline = None
    if builder.scene_source.strip() and "upload" not in builder.errors:
        try:
            item = mode.resolve_file(test_set.agent, builder.scene_source)
        except DomainError as exc:
            _spread_scene_errors(builder, exc.errors)
        else:
            if isinstance(item, str):
                inline = len(scenes)
                scenes.append(item)
            elif item not in scenes:
                scenes.append(item)
    # Every problem at once (the service stops at the first group), saving nothing.
    try:
        mode.check_test(agent=test_set.agent, scenes=scenes, **kwargs)
    except ValidationFailed as exc:
        shown = set(builder.errors) | ({"scenes"} if "source" in builder.errors else set())
        _spread_scene_errors(builder, {k: v for k, v in exc.errors.items() if k not in shown}, inline=inline)
    if builder.has_errors:
        return None
    try:
        if test is None:
            return mode.create_test(test_set=test_set, by=request.user, scenes=scenes, **kwargs)
        return mode.edit_test(test=test, by=request.user, scenes=scenes, **kwargs)
    except Rejected as exc:
        _spread_scene_errors(builder, exc.errors, inline=inline)
        return None


def _builder(request: HttpRequest, *, test_set: TestSet, test: Test | None) -> HttpResponse:
    mode = scene_mode.provider()
    plays = mode.scenes_of(test.current_version) if (mode and test and test.current_version) else []
    if request.method == "GET":
        builder = TestBuilder.from_version(test.current_version, plays) if test else TestBuilder.new()
        if test is None and mode is not None and request.GET.get("mode") == TestBuilder.SCENES:
            builder.mode = TestBuilder.SCENES
        return _builder_response(request, test_set=test_set, test=test, builder=builder)
    builder = TestBuilder.from_post(request.POST)
    if mode is None:
        builder.mode = TestBuilder.SCENARIOS
    elif test is not None:  # a test keeps the kind it was made with
        builder.mode = TestBuilder.SCENES if plays else TestBuilder.SCENARIOS
    upload = request.FILES.get("upload") if mode is not None and builder.scenes else None
    if upload is not None:
        try:
            builder.scene_source = mode.read_upload(upload)
        except ValidationFailed as exc:
            _spread_scene_errors(builder, exc.errors)
    action = request.POST.get("_action", "")
    if action == "count":  # the live counter while typing
        return _builder_response(
            request, test_set=test_set, test=test, builder=builder, fragment="builder-counter"
        )
    # "+ New check": its fields are posted with the builder's, so every round trip keeps both.
    panel = _new_check_panel(request.POST, action)
    notice = ""
    if action == "nc:save" and panel is not None:
        created = _create_new_check(request, panel, builder, test_set.agent)
        if created is not None:
            panel, notice = None, f"Check {created.name} created in the library and attached (version 1)."
    scene_notice = ""
    if action == "scene:add" and mode is not None:
        scene_notice = _add_scene(request, builder, test_set.agent, mode)
    if action:
        if action != "new_check" and not action.startswith(("nc:", "scene:")):
            builder.apply(action, request.POST, services.Limits.current())
        return _builder_response(request, test_set=test_set, test=test, builder=builder, fragment="builder",
                                 new_check=panel, notice=notice, scene_notice=scene_notice)
    if panel is not None:  # saving the test would drop what was typed for the new check
        builder.add_errors({"__all__": UNFINISHED_CHECK})
        return _builder_response(request, test_set=test_set, test=test, builder=builder, new_check=panel)
    if builder.scenes:
        saved = _save_scene_test(request, builder, test_set=test_set, test=test, mode=mode)
        if saved is not None:
            count = len(mode.scenes_of(saved.current_version))
            plays = f"it plays {count} scene{'s' if count != 1 else ''}"
            return _said_saved(
                request, saved, test, created=f"Test {saved.name} saved as version 1; {plays}.",
                new_version=f"Test {saved.name} saved as version {saved.version}; {plays}.",
            )
        return _builder_response(request, test_set=test_set, test=test, builder=builder)
    kwargs = builder.service_kwargs()
    if builder.has_errors:
        # Show every problem at once: the service checks what did parse (a bad field is left out).
        try:
            services.validate_test(agent=test_set.agent, **kwargs)
        except ValidationFailed as exc:
            builder.add_errors(exc.errors)
    else:
        try:
            if test is None:
                saved = services.create_test(test_set=test_set, by=request.user, **kwargs)
            else:
                saved = services.edit_test(test=test, by=request.user, **kwargs)
        except Rejected as exc:
            builder.add_errors(exc.errors)
        else:
            return _said_saved(request, saved, test, created=f"Test {saved.name} saved as version 1.",
                               new_version=f"Test {saved.name} saved as version {saved.version}.")
    return _builder_response(request, test_set=test_set, test=test, builder=builder)


@login_required
def test_create(request: HttpRequest, testset_pk: int) -> HttpResponse:
    test_set = get_object_or_404(
        TestSet.objects.visible_to(request.user).select_related("agent__team"), pk=testset_pk
    )
    return viewer_refusal(request, test_set.agent.team, "build tests") or _builder(
        request, test_set=test_set, test=None
    )


@login_required
def test_edit(request: HttpRequest, pk: int) -> HttpResponse:
    test = get_object_or_404(
        Test.objects.visible_to(request.user).select_related("test_set__agent__team", "current_version"),
        pk=pk,
    )
    return viewer_refusal(request, test.test_set.agent.team, "edit tests") or _builder(
        request, test_set=test.test_set, test=test
    )


@require_POST
@login_required
def test_archive(request: HttpRequest, pk: int) -> HttpResponse:
    test = get_object_or_404(
        Test.objects.visible_to(request.user).select_related("test_set__agent__team"), pk=pk
    )
    return archive_or_restore(request, test, services.archive_test, archived_to=test.test_set)
