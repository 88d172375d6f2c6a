"""Review pages: queues, sending items, the one-item-at-a-time review page and a check's calibration."""

from __future__ import annotations

import functools

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from checks.kinds import Outcome
from checks.models import Check, CheckVersion, scenario_name
from core.errors import Rejected
from core.htmx import page_or_fragment, target_fragment
from core.ids import id_from_text
from core.templatetags.names import esc, local_time, truncate
from core.urls import RowUrls, pk_url
from core.views import apply_errors, forbidden, table_row
from monitors.forms import TaskFilterForm
from monitors.models import Monitor
from reviews import calibration, services
from reviews.models import Label, ReviewItem, ReviewQueue
from runs.compare import pretty
from runs.models import CheckResult, Run
from teams.access import page_flags
from worlds.display import sample_world

QUEUES_PER_PAGE = 25
ITEMS_PER_PAGE = 50
OUTCOME_CHOICES = [("", "any outcome"), *((o.value, o.value) for o in Outcome)]

# The review page's keys (shown on the page; review.js reads the same letters from data-key attributes).
KEYS = [
    ("j", "next item"),
    ("k", "previous item"),
    ("s", "skip to the next item you have not labelled"),
    ("↑ ↓ or 1–9", "choose a check"),
    ("p", "pass"),
    ("f", "fail"),
    ("n", "write a note (Esc leaves it; the note is saved with p or f)"),
]


# ---------------------------------------------------------------- forms (shapes only; services validate)


class QueueForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=2000)


class SendForm(forms.Form):
    queue = forms.TypedChoiceField(label="Queue", required=False, coerce=int, empty_value=None)
    new_queue = forms.CharField(label="…or a new queue named", required=False, max_length=200)
    check_id = forms.TypedChoiceField(label="Check", required=False, coerce=int, empty_value=None)
    outcome = forms.ChoiceField(label="Outcome", required=False, choices=OUTCOME_CHOICES)

    def __init__(self, *args, queues=(), checks=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].choices = [("", "—"), *((q.pk, q.name) for q in queues)]
        if checks is None:
            del self.fields["check_id"], self.fields["outcome"]
        else:
            self.fields["check_id"].choices = [
                ("", "any check (the sample's outcome)"),
                *((c.pk, f"{c.name} (v{c.version})") for c in checks),
            ]

    def clean(self):
        data = super().clean()
        if not data.get("queue") and not (data.get("new_queue") or "").strip():
            self.add_error("queue", "choose a queue or name a new one")
        return data


# ---------------------------------------------------------------- queues


def _queue_for(request: HttpRequest, pk: int) -> ReviewQueue:
    return get_object_or_404(ReviewQueue.objects.visible_to(request.user).select_related("team"), pk=pk)


# What a row of the review queues list reads of a queue (with_counts()).
QUEUE_ROW_COLUMNS = (
    *("id", "name", "description", "created_at", "created_by__username"),
    *("item_count", "labelled_count"),
)


# The URL formers of the rows, made once a page.
QueueUrls = functools.partial(RowUrls, queue="reviews:queue-detail", start="reviews:queue-start")


def _queue_row(q: tuple, urls: RowUrls) -> SafeString:
    """One row of the review queues list (a QUEUE_ROW_COLUMNS tuple), as reviews/queue_list.html drew it
    (Python, not the engine)."""
    pk, name, about, created_at, by, items, labelled = q
    description = ""
    if about:
        description = f'<div class="muted small">{esc(truncate(about, 120))}</div>'
    by = f" by {esc(by)}" if by is not None else ""  # the creator's username (str(user))
    review = ""
    if items:
        review = f'<a class="button small" href="{esc(urls.start(pk))}">Review</a>'
    return table_row(
        f'<td><a href="{esc(urls.queue(pk))}">{esc(truncate(name, 80))}</a>{description}</td>',
        f'<td class="num">{items}</td>',
        f'<td class="num">{labelled}</td>',
        f'<td class="small">{esc(local_time(created_at, "Y-m-d"))}{by}</td>',
        f"<td>{review}</td>",
        attrs=f' data-queue="{esc(name)}"',
    )


@login_required
def queue_list(request: HttpRequest) -> HttpResponse:
    """The current team's queues with their counts. Queries: session, user, team, role, count, page."""
    team = request.team
    flags = page_flags(request.user, team)
    form = QueueForm(request.POST or None)
    if request.method == "POST":
        if not flags["can_edit"]:
            return forbidden(request, "Viewers can read review queues but not create them.")
        if form.is_valid():
            try:
                queue = services.create_queue(team=team, by=request.user, **form.cleaned_data)
            except Rejected as exc:
                apply_errors(form, exc)
            else:
                messages.success(request, f"Queue {queue.name} created: send samples from a run, or tasks.")
                return redirect(queue)
    queues = (
        ReviewQueue.objects.visible_to(request.user)
        .filter(team=team)
        .with_counts()
        .order_by("name", "pk")
        .values_list(*QUEUE_ROW_COLUMNS)
    )
    page = Paginator(queues, QUEUES_PER_PAGE).get_page(request.GET.get("page"))
    urls = QueueUrls()
    rows = [{"row": _queue_row(q, urls)} for q in page.object_list]
    return render(request, "reviews/queue_list.html", {"page": page, "queues": rows, "form": form, **flags})


def _results(owner) -> list[CheckResult]:
    """A sample's or task's results: the queue page's prefetch (a plain list), else its manager's."""
    listed = getattr(owner, "listed_results", None)
    return list(owner.results.all()) if listed is None else listed


def _subject(item: ReviewItem) -> dict:
    if item.sample_id:
        sample = item.sample
        scenarios = sample.run.test_version.scenarios or []
        scenario = scenarios[sample.scenario_index] if sample.scenario_index < len(scenarios) else {}
        return {
            "kind": "sample",
            "outcome": sample.outcome,
            "title": f"Run #{sample.run_id} · {scenario_name(scenario, sample.scenario_index)}"
            f" · sample {sample.sample_index + 1}",
            "url": f"{pk_url('runs:run-detail', sample.run_id)}#sample-{sample.pk}",
            "results": sorted(_results(sample), key=lambda r: r.pk),
        }
    task = item.task
    latest: dict[int, CheckResult] = {}
    for result in _results(task):  # newest per check version (several monitors may judge a task)
        if result.check_version_id not in latest or result.pk > latest[result.check_version_id].pk:
            latest[result.check_version_id] = result
    return {
        "kind": "task",
        "outcome": "fail" if task.has_failures else "",
        "title": f"Task {task.external_id} · {task.agent.name}",
        "url": pk_url("monitors:task-detail", task.pk),
        "results": sorted(latest.values(), key=lambda r: r.pk),
    }


# What a row of the queue page (_item_rows) reads of an item, its sample or task and their run, version,
# agent: plain tuples, no model instances (50 items, their samples, runs, versions, results and labels).
ITEM_ROW_COLUMNS = (
    *("id", "position", "sample_id", "task_id"),
    *("sample__run_id", "sample__scenario_index", "sample__sample_index", "sample__outcome"),
    "sample__run__test_version__scenarios",
    *("task__external_id", "task__has_failures", "task__agent__name"),
)
# A result as a row shows it, and a label.
RESULT_ROW_COLUMNS = ("id", "outcome", "check_version_id", "check_version__name", "check_version__number")
LABEL_ROW_COLUMNS = ("item_id", "note", "reviewer__username", "check_version__name", "verdict")


def _items(queue: ReviewQueue):
    """The queue's items in order, as ITEM_ROW_COLUMNS tuples (the paginator slices and counts it)."""
    return ReviewItem.objects.filter(queue=queue).order_by("position").values_list(*ITEM_ROW_COLUMNS)


def _item_rows(items: list[tuple], url_parts: tuple[str, str]) -> list[SafeString]:
    """The rows of a page of _items(): the results of its samples and tasks and its labels read as tuples
    (one query each, only when the page has samples, tasks, items), then each row drawn by _item_row."""
    sample_ids = [i[2] for i in items if i[2] is not None]
    task_ids = [i[3] for i in items if i[3] is not None]
    by_sample: dict[int, list[tuple]] = {}
    by_task: dict[int, list[tuple]] = {}
    if sample_ids:
        for r in CheckResult.objects.filter(sample_id__in=sample_ids).values_list(
            "sample_id", *RESULT_ROW_COLUMNS
        ):
            by_sample.setdefault(r[0], []).append(r[1:])
    if task_ids:
        for r in CheckResult.objects.filter(task_id__in=task_ids).values_list("task_id", *RESULT_ROW_COLUMNS):
            by_task.setdefault(r[0], []).append(r[1:])
    labels: dict[int, list[tuple]] = {}
    if items:
        for lab in (
            Label.objects.filter(item_id__in=[i[0] for i in items])
            .order_by("id")
            .values_list(*LABEL_ROW_COLUMNS)
        ):
            labels.setdefault(lab[0], []).append(lab)
    head, tail = url_parts
    rows = []
    for item in items:
        pk, position, sample_id, task_id, run_id, scenario_index, sample_index, outcome, scenarios = item[:9]
        if sample_id is not None:
            scenarios = scenarios or []
            scenario = scenarios[scenario_index] if scenario_index < len(scenarios) else {}
            title = (
                f"Run #{run_id} · {scenario_name(scenario, scenario_index)}"
                f" · sample {sample_index + 1}"
            )
            kind, results = "sample", sorted(by_sample.get(sample_id, ()))
        else:
            external_id, has_failures, agent_name = item[9:]
            latest: dict[int, tuple] = {}
            for r in by_task.get(task_id, ()):  # newest per check version (several monitors may judge a task)
                if r[2] not in latest or r[0] > latest[r[2]][0]:
                    latest[r[2]] = r
            title, kind, outcome = (
                f"Task {external_id} · {agent_name}",
                "task",
                "fail" if has_failures else "",
            )
            results = sorted(latest.values())
        rows.append(
            _item_row(position, f"{head}{pk}{tail}", title, kind, outcome, results, labels.get(pk, ()))
        )
    return rows


@login_required
def queue_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A queue's items, 50 a page, with their check results and labels.

    Queries: session, user, queue, role, count, page, sample results, task results, labels."""
    queue = _queue_for(request, pk)
    page = Paginator(_items(queue), ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [{"html": html} for html in _item_rows(list(page.object_list), _item_url_parts(queue))]
    context = {"queue": queue, "page": page, "rows": rows, **page_flags(request.user, queue.team)}
    return render(request, "reviews/queue_detail.html", context)


_ITEM = 7_293_015_864_201  # stands for an item's id in its reversed URL; no real row has it


def _item_url_parts(queue: ReviewQueue) -> tuple[str, str]:
    """The text around an item's id in the review URL of `queue`'s items (ReviewItem.get_absolute_url),
    reversed once a page instead of once a row."""
    head, tail = reverse("reviews:item-review", args=[queue.pk, _ITEM]).rsplit(str(_ITEM), 1)
    return head, tail


def _item_row(position, url, title, kind, outcome, results, labels) -> SafeString:
    """One row of a queue's items, as the template drew it (50 a page: Python, not the engine). `results`
    are RESULT_ROW_COLUMNS tuples, `labels` LABEL_ROW_COLUMNS tuples."""
    badge = f' <span class="badge {esc(outcome)}">{esc(outcome)}</span>' if outcome else ""
    shown = "".join(
        f'<span class="badge {esc(outcome)}" title="{esc(name)} v{number}">'
        f"{esc(truncate(name, 30))}: {esc(outcome)}</span> "
        for _, outcome, _, name, number in results
    )
    labelled = "".join(
        f'<span class="tag" title="{esc(note)}">{esc(reviewer)} · '
        f"{esc(truncate(name, 20))}: {esc(verdict)}</span> "
        for _, note, reviewer, name, verdict in labels
    )
    return table_row(
        f"<td>{position}</td>",
        f'<td><a href="{esc(url)}">{esc(truncate(title, 90))}</a>'
        f' <span class="tag">{esc(kind)}</span>{badge}</td>',
        f'<td class="small">{shown or '<span class="muted">none</span>'}</td>',
        f'<td class="small">{labelled or '<span class="muted">not labelled</span>'}</td>',
        attrs=f' data-item="{position}"',
    )


@login_required
def queue_start(request: HttpRequest, pk: int) -> HttpResponse:
    """The first item the user has not labelled yet (else the first item)."""
    queue = _queue_for(request, pk)
    items = ReviewItem.objects.filter(queue=queue).order_by("position")
    item = items.exclude(labels__reviewer=request.user).first() or items.first()
    if item is None:
        messages.warning(request, "This queue is empty: send samples from a run, or tasks, first.")
        return redirect(queue)
    return redirect(item)


# ---------------------------------------------------------------- reviewing one item


def _messages(raw, output: str = "") -> list[dict]:
    rows = []
    for message in raw if isinstance(raw, list) else []:
        if isinstance(message, dict):
            role = str(message.get("role", ""))
            rows.append(
                {
                    "role": role if role in ("user", "assistant", "system", "tool") else "other",
                    "label": role or "message",
                    "content": pretty(message.get("content")),
                }
            )
        else:
            rows.append({"role": "other", "label": "message", "content": pretty(message)})
    if output and not (rows and rows[-1]["role"] == "assistant" and rows[-1]["content"] == output):
        rows.append({"role": "assistant", "label": "assistant", "content": output})
    return rows


def _tool_calls(raw) -> dict:
    if raw is None:
        return {"state": "unknown", "items": []}
    if not isinstance(raw, list):
        return {"state": "malformed", "raw": pretty(raw), "items": []}
    return {
        "state": "list",
        "items": [
            {
                "index": i,
                "name": str(c.get("name", "")),
                "status": str(c.get("status", "")),
                "input": pretty(c.get("input")),
                "output": pretty(c.get("output")),
                "error": pretty(c.get("error")),
            }
            if isinstance(c, dict)
            else {
                "index": i,
                "name": "",
                "status": "",
                "input": pretty(c),
                "output": "",
                "error": "not an object",
            }
            for i, c in enumerate(raw)
        ],
    }


def _evidence(item: ReviewItem) -> dict:
    if item.sample_id:
        sample = item.sample
        transcript = sample.transcript if isinstance(sample.transcript, list) and sample.transcript else None
        if transcript is None:
            scenarios = sample.run.test_version.scenarios or []
            scenario = scenarios[sample.scenario_index] if sample.scenario_index < len(scenarios) else {}
            transcript = list(scenario.get("messages") or [])
        return {
            "messages": _messages(transcript, sample.output),
            "tool_calls": _tool_calls(sample.tool_calls),
            "trace": sample.trace if isinstance(sample.trace, list) else [],
            "world": sample_world(sample.world, sample.world_checks or []),
            "sample": sample,
        }
    task = item.task
    return {
        "messages": _messages(task.messages, task.output),
        "tool_calls": _tool_calls(task.tool_calls),
        "trace": task.trace if isinstance(task.trace, list) else [],
        "world": None,
        "sample": None,
    }


def _checks(item: ReviewItem, results: list[CheckResult], user) -> list[dict]:
    labels = list(Label.objects.filter(item=item).select_related("reviewer").order_by("created_at", "id"))
    rows = []
    for index, result in enumerate(results):
        version = result.check_version
        details = result.details if isinstance(result.details, dict) else {}
        judge = details.get("judge") if isinstance(details.get("judge"), dict) else None
        prompt = judge.get("prompt") if judge else None
        mine = next(
            (lab for lab in labels if lab.check_version_id == version.pk and lab.reviewer_id == user.pk), None
        )
        rows.append(
            {
                "index": index,
                "result": result,
                "version": version,
                "mine": mine,
                "others": [
                    lab for lab in labels if lab.check_version_id == version.pk and lab.reviewer_id != user.pk
                ],
                "prompt": [(m.get("role", ""), m.get("content", "")) for m in prompt if isinstance(m, dict)]
                if isinstance(prompt, list)
                else [],
                "is_judge": version.kind == services.JUDGE_KIND,
            }
        )
    return rows


def _review_context(request: HttpRequest, queue: ReviewQueue, item: ReviewItem) -> dict:
    subject = _subject(item)
    siblings = ReviewItem.objects.filter(queue=queue)
    previous = (
        siblings.filter(position__lt=item.position).order_by("-position").values_list("pk", flat=True).first()
    )
    following = siblings.filter(position__gt=item.position).order_by("position")
    next_id = following.values_list("pk", flat=True).first()
    unlabelled = following.exclude(labels__reviewer=request.user).values_list("pk", flat=True).first()
    total = siblings.count()
    done = siblings.filter(labels__reviewer=request.user).order_by().values("pk").distinct().count()
    url = lambda pk: reverse("reviews:item-review", args=[queue.pk, pk]) if pk else ""  # noqa: E731
    return {
        "queue": queue,
        "item": item,
        "subject": subject,
        "evidence": _evidence(item),
        "checks": _checks(item, subject["results"], request.user),
        "previous_url": url(previous),
        "next_url": url(next_id),
        "skip_url": url(unlabelled),
        "total": total,
        "done": done,
        "keys": KEYS,
        **page_flags(request.user, queue.team),
    }


def _item_for(request: HttpRequest, pk: int, item_pk: int) -> tuple[ReviewQueue, ReviewItem]:
    queue = _queue_for(request, pk)
    results = CheckResult.objects.select_related("check_version").order_by("id")
    item = get_object_or_404(
        ReviewItem.objects.filter(queue=queue)
        .select_related("sample__run__test_version", "sample__world__scene_version", "task__agent")
        .prefetch_related(
            Prefetch("sample__results", queryset=results),
            Prefetch("task__results", queryset=results),
            "sample__world__entries",
            "sample__world__tool_states",
        ),
        pk=item_pk,
    )
    return queue, item


@login_required
def item_review(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    queue, item = _item_for(request, pk, item_pk)
    return render(request, "reviews/item_review.html", _review_context(request, queue, item))


@require_POST
@login_required
def item_label(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    """Save the user's label for one check of the item; HTMX gets the item's checks back."""
    queue, item = _item_for(request, pk, item_pk)
    raw = request.POST.get("check_version", "")
    version = None
    if (version_id := id_from_text(raw)) is not None:
        version = CheckVersion.objects.filter(pk=version_id, parent__agent__team=queue.team).first()
    error = ""
    if version is None:
        error = "check_version: choose a check of this item"
    else:
        try:
            services.label_item(
                item=item,
                check_version=version,
                by=request.user,
                verdict=request.POST.get("verdict", ""),
                note=request.POST.get("note", ""),
            )
        except Rejected as exc:
            error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(item)
    context = _review_context(request, queue, item)
    context["label_error"] = error
    response = render(request, "reviews/item_review.html#review-checks", context, status=200)
    if not error:
        response["HX-Trigger"] = "label-saved"
    return response


# ---------------------------------------------------------------- sending items to a queue


def _send_source(request: HttpRequest, data) -> dict:
    """What is being sent: a run (?run=), a monitor (?monitor=) or tasks chosen on the task list
    (task=ID... or all=1 with the list's filters). 404 for another team's run or monitor."""
    if data.get("run"):
        run = get_object_or_404(
            Run.objects.visible_to(request.user).select_related("agent__team"), pk=_int(data.get("run"))
        )
        return {
            "kind": "run",
            "run": run,
            "team": run.agent.team,
            "agent": run.agent,
            "title": f"samples of run #{run.pk}",
            "hidden": [("run", run.pk)],
        }
    if data.get("monitor"):
        monitor = get_object_or_404(
            Monitor.objects.visible_to(request.user).select_related("agent__team"),
            pk=_int(data.get("monitor")),
        )
        return {
            "kind": "monitor",
            "monitor": monitor,
            "team": monitor.agent.team,
            "agent": monitor.agent,
            "title": f"tasks evaluated by monitor {monitor.name}",
            "hidden": [("monitor", monitor.pk)],
        }
    team = request.team
    if data.get("all") == "1":
        agents = list(team.agents.all()) if team else []
        form = TaskFilterForm(data, agents=agents)
        filters = form.filters() if form.is_valid() else None
        params = filters.as_params() if filters else {}
        return {
            "kind": "filters",
            "filters": filters,
            "team": team,
            "agent": None,
            "title": "every task matching the task list's filters",
            "hidden": [("all", "1"), *params.items()],
        }
    ids = [i for i in map(id_from_text, data.getlist("task")) if i is not None]
    return {
        "kind": "tasks",
        "task_ids": ids,
        "team": team,
        "agent": None,
        "title": f"{len(ids)} chosen task{'s' if len(ids) != 1 else ''}",
        "hidden": [("task", t) for t in ids],
    }


def _int(raw) -> int:
    return id_from_text(str(raw or "")) or 0


@login_required
def send(request: HttpRequest) -> HttpResponse:
    """Send samples of a run, tasks of a monitor, or tasks chosen on the task list to a queue."""
    data = request.POST if request.method == "POST" else request.GET
    source = _send_source(request, data)
    team = source["team"]
    flags = page_flags(request.user, team)
    queues = (
        list(ReviewQueue.objects.visible_to(request.user).filter(team=team).order_by("name", "pk"))
        if team
        else []
    )
    checks = None
    if source["agent"] is not None:
        checks = list(
            Check.objects.filter(agent=source["agent"], archived_at__isnull=True).order_by("name", "pk")
        )
    form = SendForm(
        request.POST if request.method == "POST" else None,
        queues=queues,
        checks=checks,
        initial={"queue": _int(request.GET.get("queue")) or None},
    )
    if request.method == "POST":
        if not flags["can_edit"]:
            return forbidden(request, "Viewers can read review queues but not send items to them.")
        if form.is_valid():
            try:
                sent = _do_send(request, source, form.cleaned_data, queues, checks or [])
            except Rejected as exc:
                apply_errors(
                    form,
                    exc,
                    aliases={
                        "samples": "__all__",
                        "tasks": "__all__",
                        "run": "__all__",
                        "monitor": "__all__",
                        "check": "check_id",
                        "name": "new_queue",
                    },
                )
            else:
                already = f" ({sent.already} already there)" if sent.already else ""
                messages.success(
                    request,
                    f"{sent.added} item{'s' if sent.added != 1 else ''} sent to {sent.queue.name}{already}.",
                )
                return redirect(sent.queue)
    context = {"form": form, "source": source, "limit": services.MAX_ITEMS_PER_SEND, **flags}
    return render(request, "reviews/send.html", context)


def _do_send(request, source: dict, data: dict, queues: list[ReviewQueue], checks: list[Check]):
    queue = next((q for q in queues if q.pk == data.get("queue")), None)
    if queue is None:
        queue = services.create_queue(team=source["team"], by=request.user, name=data.get("new_queue", ""))
    check = next((c for c in checks if c.pk == data.get("check_id")), None)
    outcome = data.get("outcome") or None
    if source["kind"] == "run":
        return services.send_samples(
            queue=queue, run=source["run"], by=request.user, check=check, outcome=outcome
        )
    if source["kind"] == "monitor":
        return services.send_tasks(
            queue=queue, by=request.user, monitor=source["monitor"], check=check, outcome=outcome
        )
    if source["kind"] == "filters":
        if source["filters"] is None:
            raise services.ValidationFailed("the task filters are not valid any more", field="tasks")
        return services.send_tasks(queue=queue, by=request.user, filters=source["filters"])
    return services.send_tasks(queue=queue, by=request.user, task_ids=source["task_ids"])


# ---------------------------------------------------------------- calibration of a judge check


@login_required
def check_calibration(request: HttpRequest, check_pk: int) -> HttpResponse:
    """How far each version of a judge check agrees with people. `?version=N` (default: current).

    Queries: session, user, check, versions, labels, role (whatever the number of labels)."""
    check = get_object_or_404(
        Check.objects.visible_to(request.user).select_related("agent__team"), pk=check_pk
    )
    versions = calibration.check_versions(check)
    version = calibration.pick_version(versions, request.GET.get("version"), check.version)
    figures = calibration.calibrate(version) if version is not None else None
    context = {
        "check": check,
        "versions": versions,
        "figures": figures,
        "is_judge": check.kind == services.JUDGE_KIND,
        **page_flags(request.user, check.agent.team),
    }
    return page_or_fragment(
        request, "reviews/calibration.html", target_fragment(request, ["calibration"]), context
    )


@require_POST
@login_required
def promote(request: HttpRequest, check_pk: int) -> HttpResponse:
    """Promote labelled items into the judge's examples: one new check version."""
    check = get_object_or_404(
        Check.objects.visible_to(request.user).select_related("agent__team"), pk=check_pk
    )
    ids = [_int(x) for x in request.POST.getlist("label")]
    labels = list(
        Label.objects.visible_to(request.user)
        .filter(pk__in=ids)
        .select_related("check_version", "result", "item__sample", "item__task")
    )
    try:
        saved = services.promote_examples(check=check, labels=labels, by=request.user)
    except Rejected as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Saved {saved.name} v{saved.version} with {len(labels)} new example"
            f"{'s' if len(labels) != 1 else ''}: its calibration starts afresh.",
        )
    back = request.POST.get("next", "")
    if back.startswith("/") and not back.startswith("//"):
        return redirect(back)
    return redirect(reverse("reviews:check-calibration", args=[check.pk]))
