"""Every write of human review: queues, sending samples and tasks to a queue, labels, and promoting labelled
items into a judge check's examples (a new check version, through checks' own versioning service).

Permissions (teams.access): viewers read; members create queues, send items and label; another team's
queue, run, monitor or task is "does not exist".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet

from checks import services as check_services
from checks.evaluation import evidence_from
from checks.kinds import Outcome
from checks.kinds.ai_judge import EXAMPLE_CHARS, MAX_EXAMPLES, conversation_entries
from checks.models import Check, CheckVersion
from core.errors import ValidationFailed
from monitors.models import Monitor, Task
from monitors.services import TaskFilters, filter_tasks
from reviews.models import Label, ReviewItem, ReviewQueue
from runs.models import CheckResult, Run, Sample
from teams import access
from teams.models import Team

MAX_ITEMS_PER_SEND = 500  # a send adds at most this many items; narrow the filter to send more
MAX_NOTE_CHARS = 2_000
JUDGE_KIND = "ai_judge"
OUTCOMES = tuple(o.value for o in Outcome)


@dataclass(frozen=True)
class Sent:
    """What a send did: `added` new items, `already` matching items the queue held before."""

    queue: ReviewQueue
    added: int
    already: int


# ---------------------------------------------------------------- queues


def _clean_text(value: object, field: str, limit: int, *, required: bool = False) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValidationFailed("must be text", field=field)
    value = value.strip()
    if required and not value:
        raise ValidationFailed("this field is required", field=field)
    if len(value) > limit:
        raise ValidationFailed(f"at most {limit:,} characters (this has {len(value):,})", field=field)
    if "\x00" in value:
        raise ValidationFailed("cannot contain NUL characters", field=field)
    return value


def validate_new_queue(*, team: Team, name: str, description: str = "") -> tuple[str, str]:
    """(name, description) cleaned, or ValidationFailed naming the field (a name is unique per team)."""
    name = _clean_text(name, "name", 200, required=True)
    description = _clean_text(description, "description", 2_000)
    if ReviewQueue.objects.filter(team=team, name=name).exists():
        raise ValidationFailed(f"{team} already has a review queue called {name!r}", field="name")
    return name, description


def create_queue(*, team: Team, by, name: str, description: str = "") -> ReviewQueue:
    """A named review queue of `team`. Raises PermissionDenied (viewers) and ValidationFailed (name)."""
    access.require(by, access.CREATE, ReviewQueue, team=team)
    name, description = validate_new_queue(team=team, name=name, description=description)
    taken = f"{team} already has a review queue called {name!r}"
    try:
        with transaction.atomic():
            return ReviewQueue.objects.create(team=team, name=name, description=description, created_by=by)
    except IntegrityError as exc:  # the same name created since the check above
        raise ValidationFailed(taken, field="name") from exc


# ---------------------------------------------------------------- sending items


def _same_team(obj, team: Team, field: str, noun: str) -> None:
    if access.team_id_of(obj) != team.pk:
        raise ValidationFailed(f"{noun} {obj.pk} does not exist", field=field)


def _outcome(outcome: str | None) -> str | None:
    if outcome in (None, ""):
        return None
    if outcome not in OUTCOMES:
        raise ValidationFailed(f"must be one of {', '.join(OUTCOMES)}", field="outcome")
    return outcome


def _add(queue: ReviewQueue, by, field: str, candidates: QuerySet, order: Sequence[str], noun: str) -> Sent:
    """Add the `candidates` (samples or tasks) not yet in `queue`, in `order`, at most MAX_ITEMS_PER_SEND."""
    with transaction.atomic():
        # One send at a time per queue: positions are numbered under this lock.
        ReviewQueue.objects.select_for_update().filter(pk=queue.pk).first()
        in_queue = {"review_items__queue": queue}
        already = candidates.filter(**in_queue).order_by().values("pk").distinct().count()
        fresh = candidates.exclude(**in_queue).order_by(*order).values_list("pk", flat=True).distinct()
        ids = list(fresh[: MAX_ITEMS_PER_SEND + 1])
        if len(ids) > MAX_ITEMS_PER_SEND:
            raise ValidationFailed(
                f"more than {MAX_ITEMS_PER_SEND} {noun}s match; a send adds at most {MAX_ITEMS_PER_SEND} "
                f"items: narrow the filter (check, outcome, dates) and send the rest separately",
                field=field,
            )
        if not ids and not already:
            raise ValidationFailed(f"no {noun} matches: nothing to send", field=field)
        start = (ReviewItem.objects.filter(queue=queue).aggregate(m=Max("position"))["m"] or 0) + 1
        column = "sample_id" if noun == "sample" else "task_id"
        ReviewItem.objects.bulk_create(
            [
                ReviewItem(queue=queue, position=start + i, added_by=by, **{column: pk})
                for i, pk in enumerate(ids)
            ]
        )
    return Sent(queue=queue, added=len(ids), already=already)


def send_samples(
    *, queue: ReviewQueue, run: Run, by, check: Check | None = None, outcome: str | None = None
) -> Sent:
    """Send the finished samples of `run` to `queue`: those whose `check` result had `outcome`, or with a
    check only, every sample it judged; with an outcome only, samples of that overall outcome."""
    access.require(by, access.CREATE, ReviewItem, team=queue.team)
    _same_team(run, queue.team, "run", "run")
    outcome = _outcome(outcome)
    samples = Sample.objects.filter(run=run, status=Sample.Status.DONE)
    if check is not None:
        if check.agent_id != run.agent_id:
            raise ValidationFailed(f"check {check.pk} is not a check of this run's agent", field="check")
        judged = {"results__check_version__parent": check}
        samples = samples.filter(**judged, **({"results__outcome": outcome} if outcome else {}))
    elif outcome:
        samples = samples.filter(outcome=outcome)
    return _add(queue, by, "samples", samples, ("scenario_index", "sample_index", "pk"), "sample")


def send_tasks(
    *,
    queue: ReviewQueue,
    by,
    task_ids: Iterable[int] | None = None,
    filters: TaskFilters | None = None,
    monitor: Monitor | None = None,
    check: Check | None = None,
    outcome: str | None = None,
) -> Sent:
    """Send tasks to `queue`: chosen ids, every task matching the task list's `filters`, or the tasks a
    `monitor` evaluated (narrowed to those whose `check` result had `outcome`)."""
    access.require(by, access.CREATE, ReviewItem, team=queue.team)
    outcome = _outcome(outcome)
    tasks = Task.objects.filter(agent__team=queue.team)
    if monitor is not None:
        _same_team(monitor, queue.team, "monitor", "monitor")
        scope = {"results__monitor": monitor}
        if check is not None:
            if check.agent_id != monitor.agent_id:
                raise ValidationFailed(
                    f"check {check.pk} is not a check of this monitor's agent", field="check"
                )
            scope["results__check_version__parent"] = check
        if outcome:
            scope["results__outcome"] = outcome
        tasks = tasks.filter(**scope)
    elif filters is not None:
        tasks = filter_tasks(tasks, filters)
    elif task_ids is not None:
        ids = sorted({int(pk) for pk in task_ids})
        found = set(tasks.filter(pk__in=ids).values_list("pk", flat=True))
        missing = [pk for pk in ids if pk not in found]
        if missing:
            raise ValidationFailed(f"task {missing[0]} does not exist", field="tasks")
        if len(ids) > MAX_ITEMS_PER_SEND:
            raise ValidationFailed(
                f"{len(ids)} tasks chosen; a send adds at most {MAX_ITEMS_PER_SEND} items", field="tasks"
            )
        tasks = tasks.filter(pk__in=ids)
    else:
        raise ValidationFailed("choose tasks, a filter of the task list or a monitor", field="tasks")
    return _add(queue, by, "tasks", tasks, ("-completed_at", "-pk"), "task")


# ---------------------------------------------------------------- labels


def result_of(item: ReviewItem, check_version: CheckVersion) -> CheckResult | None:
    """The result of `check_version` the item had (a task's newest one, if several monitors judged it)."""
    if item.sample_id:
        rows = CheckResult.objects.filter(sample_id=item.sample_id, check_version=check_version)
    else:
        rows = CheckResult.objects.filter(task_id=item.task_id, check_version=check_version)
    return rows.order_by("-created_at", "-id").first()


def label_item(*, item: ReviewItem, check_version: CheckVersion, by, verdict: str, note: str = "") -> Label:
    """Record (or change) `by`'s pass/fail for `check_version` on `item`, with an optional note.

    The label is the reviewer's own: labelling again edits it; another reviewer's label stays. Raises
    PermissionDenied (viewers) and ValidationFailed naming `verdict`, `note` or `check_version`.
    """
    access.require(by, access.CREATE, Label, team=item.queue.team)
    if by is None or not getattr(by, "is_authenticated", False):
        raise ValidationFailed("a label needs a reviewer", field="__all__")
    if verdict not in Label.Verdict.values:
        raise ValidationFailed('must be "pass" or "fail"', field="verdict")
    note = _clean_text(note, "note", MAX_NOTE_CHARS)
    result = result_of(item, check_version)
    if result is None:
        raise ValidationFailed(
            f"this item has no result of {check_version.name} v{check_version.number} to label",
            field="check_version",
        )
    label, _ = Label.objects.update_or_create(
        item=item,
        check_version=check_version,
        reviewer=by,
        defaults={"verdict": verdict, "note": note, "result": result},
    )
    return label


# ---------------------------------------------------------------- few-shot examples


def _tail(text: str, limit: int) -> str:
    """The end of `text` (the final output is last), marked when cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def example_conversation(label: Label) -> str:
    """What the judge saw for the labelled item: its prompt's conversation when the judge was asked, else
    the same text built from the item's evidence."""
    details = label.result.details if isinstance(label.result.details, dict) else {}
    prompt = (details.get("judge") or {}).get("prompt") if isinstance(details.get("judge"), dict) else None
    if isinstance(prompt, list) and len(prompt) > 1 and isinstance(prompt[1], dict):
        text = prompt[1].get("content")
        if isinstance(text, str) and text.strip():
            return _tail(text.strip(), EXAMPLE_CHARS)
    item = label.item
    if item.sample_id:
        sample = item.sample
        messages, output = sample.transcript or [], sample.output
        tool_calls = sample.tool_calls
    else:
        task = item.task
        messages, output, tool_calls = task.messages or [], task.output, task.tool_calls
    entries, note, final = conversation_entries(
        evidence_from(
            output=output, messages=messages if isinstance(messages, list) else [], tool_calls=tool_calls
        )
    )
    lines = (
        [entry.text for entry in entries] + ([note] if note else []) + ["Final output of the agent:", final]
    )
    return _tail("\n".join(lines), EXAMPLE_CHARS)


def promote_examples(*, check: Check, labels: Sequence[Label], by) -> Check:
    """Add the labelled items to the judge check's examples, saving version n+1 of the check.

    Each example is the conversation the judge saw, the person's verdict and their note as the reason.
    Raises PermissionDenied (viewers) and ValidationFailed: not an AI judge check, labels of another
    check, none chosen, or more than the judge's MAX_EXAMPLES in all.
    """
    access.require(by, access.CHANGE, check, team=check.agent.team)
    if check.kind != JUDGE_KIND:
        raise ValidationFailed("only an AI judge check has examples", field="check")
    if not labels:
        raise ValidationFailed("choose at least one label to promote", field="labels")
    for label in labels:
        if label.check_version.parent_id != check.pk:
            raise ValidationFailed(f"label {label.pk} is not a label of this check", field="labels")
    current = CheckVersion.objects.get(pk=check.current_version_id)
    examples = list(current.config.get("examples") or [])
    for label in labels:
        example = {
            "conversation": example_conversation(label),
            "verdict": label.verdict,
            "reason": " ".join(label.note.split())[:1_000],
        }
        if not any(e.get("conversation") == example["conversation"] for e in examples):
            examples.append(example)
    if len(examples) > MAX_EXAMPLES:
        raise ValidationFailed(
            f"an AI judge holds at most {MAX_EXAMPLES} examples; with these it would have {len(examples)}: "
            "remove some in the check's form first",
            field="labels",
        )
    return check_services.edit_check(check=check, by=by, config={**current.config, "examples": examples})
