"""Scene pages: the Scenes tab of an agent (its library), a scene with its versions, and the
new/edit page that validates the file as you type, with every problem on its line."""

from __future__ import annotations

import re
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from agents.models import Agent
from checks.models import TestSet
from core.errors import DomainError, Rejected
from core.templatetags.names import esc, local_time, trunc
from core.urls import pk_url_former
from core.views import table_row
from teams.access import page_flags
from teams.views import archive_or_restore, edit_refusal, viewer_refusal
from worlds import services
from worlds.forms import SceneForm
from worlds.models import Scene, SceneVersion

PAGE_SIZE = 50
VERSIONS_PER_PAGE = 20
LINE = re.compile(r"^[^:\n]+:(\d+): ")

# The text a new scene starts from.
NEW_SCENE = (Path(__file__).parent / "scenes" / "new-scene.yaml").read_text(encoding="utf-8")


def _agent_for(request: HttpRequest, pk: int) -> Agent:
    return get_object_or_404(Agent.objects.visible_to(request.user).select_related("team"), pk=pk)


def _scene_for(request: HttpRequest, pk: int) -> Scene:
    return get_object_or_404(
        Scene.objects.visible_to(request.user).select_related("agent__team", "current_version", "created_by"),
        pk=pk,
    )


def summary_of(version: SceneVersion | None) -> dict:
    """Tools, record count, checks and trials of a saved version (it validated when saved)."""
    if version is None:
        return {}
    scene = services.engine_scene_of(version)
    return {
        "tools": scene.tools,
        "records": len(scene.records),
        "checks": [c.id for c in scene.checks],
        "required": list(scene.required),
        "people": list(scene.people),
        "trials": scene.trials,
        "task": scene.task,
        "description": scene.description,
    }


def problems_by_line(problems: list[str]) -> tuple[list[tuple[int, str]], set[int]]:
    """(line, problem) pairs in line order, and the set of lines with a problem."""
    pairs = []
    for problem in problems:
        match = LINE.match(problem)
        pairs.append((int(match.group(1)) if match else 0, problem))
    pairs.sort(key=lambda p: p[0])
    return pairs, {line for line, _ in pairs if line}


def numbered(source: str, bad: set[int] = frozenset()) -> list[tuple[int, str, bool]]:
    return [(n, text, n in bad) for n, text in enumerate(source.split("\n"), start=1)]


@login_required
def scene_list(request: HttpRequest, agent_pk: int) -> HttpResponse:
    agent = _agent_for(request, agent_pk)
    archived = request.GET.get("archived") in ("1", "true")
    scenes = Scene.objects.visible_to(request.user).filter(agent=agent, archived_at__isnull=not archived)
    page = Paginator(
        scenes.order_by("name", "id").values_list(*SCENE_ROW_COLUMNS), PAGE_SIZE
    ).get_page(request.GET.get("page"))
    url = pk_url_former("worlds:scene-detail")
    rows = [{"row": _scene_row(s, url)} for s in page.object_list]
    context = {
        "agent": agent,
        "tab": "scenes",
        "page": page,
        "scenes": rows,
        "archived": archived,
        "query": "archived=1" if archived else "",
        **page_flags(request.user, agent.team),
    }
    return render(request, "worlds/scene_list.html", context)


# What a row of an agent's scenes reads of a scene and its current version.
SCENE_ROW_COLUMNS = (
    *("id", "name", "version", "updated_at"),
    *("current_version_id", "current_version__source", "current_version__filename"),
)


def _scene_row(s: tuple, url) -> SafeString:
    """One row of an agent's scenes (a SCENE_ROW_COLUMNS tuple), as the template would draw it (50 a
    page: Python, not the engine): its tools, checks and description from the version's parsed scene
    (summary_of's); `url` forms a scene's URL (pk_url_former("worlds:scene-detail"))."""
    pk, name, number, updated_at, version_id, source, filename = s
    tools, checks, about = (), 0, ""
    if version_id is not None:
        scene = services.parsed_scene(version_id, source, filename)
        tools, checks, about = scene.tools or (), len(scene.checks), scene.description
    about = f'<div class="muted small">{trunc(about)}</div>' if about else ""
    tools = "".join(f'<span class="tag">{conditional_escape(t)}</span> ' for t in tools)
    updated = local_time(updated_at, "Y-m-d H:i")
    return table_row(
        f'<td><a href="{esc(url(pk))}"><strong>{trunc(name)}</strong></a>{about}</td>',
        f"<td>v{number}</td>",
        f'<td class="small">{tools}</td>',
        f'<td class="small">{checks}</td>',
        f'<td class="small muted">{esc(updated)}</td>',
        attrs=f' class="scene-row" data-scene="{esc(name)}"',
    )


def _form_page(request: HttpRequest, *, agent: Agent, scene: Scene | None) -> HttpResponse:
    initial = scene.current_version.source if scene and scene.current_version else NEW_SCENE
    form = SceneForm(request.POST or None, request.FILES or None, initial={"source": initial})
    problems: list[str] = []
    status = 200
    if request.method == "POST" and form.is_valid():
        source = form.cleaned_data["source"]
        try:
            if scene is None:
                saved = services.create_scene(agent=agent, by=request.user, source=source)
            else:
                saved = services.edit_scene(scene=scene, by=request.user, source=source)
        except services.SceneRejected as exc:
            problems = exc.problems
            form.add_error(
                "source", f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in the scene"
            )
        except Rejected as exc:
            for field, message in exc.errors.items():
                form.add_error(None if field == "__all__" else "source", message)
        else:
            messages.success(request, f"Scene {saved.name} saved as version {saved.version}.")
            return redirect(saved)
    if request.method == "POST":
        status = 400 if form.errors else 200
    source = form.data.get("source", initial) if form.is_bound else initial
    if form.is_bound and form.cleaned_data.get("filename"):
        source = form.cleaned_data.get("source", source)
    pairs, bad = problems_by_line(problems)
    context = {
        "agent": agent,
        "scene": scene,
        "form": form,
        "tab": "scenes",
        "problems": pairs,
        "source": source,
        "lines": numbered(source, bad),
        "validated": bool(form.is_bound),
    }
    return render(request, "worlds/scene_form.html", context, status=status)


@login_required
def scene_create(request: HttpRequest, agent_pk: int) -> HttpResponse:
    agent = _agent_for(request, agent_pk)
    return viewer_refusal(request, agent.team, "add scenes") or _form_page(request, agent=agent, scene=None)


@login_required
def scene_edit(request: HttpRequest, pk: int) -> HttpResponse:
    scene = _scene_for(request, pk)
    return edit_refusal(request, scene) or _form_page(request, agent=scene.agent, scene=scene)


@login_required
@require_POST
def scene_validate(request: HttpRequest, agent_pk: int) -> HttpResponse:
    """The as-you-type check (HTMX): every problem of the posted file, on its line. Saves nothing."""
    agent = _agent_for(request, agent_pk)
    source = request.POST.get("source", "")
    problems: list[str] = []
    try:
        parsed = services.parse_scene(source)
    except services.SceneRejected as exc:
        problems, parsed = exc.problems, None
    except DomainError as exc:
        problems, parsed = [str(exc)], None
    pairs, bad = problems_by_line(problems)
    context = {
        "agent": agent,
        "problems": pairs,
        "lines": numbered(source, bad),
        "parsed": parsed,
        "validated": True,
    }
    return render(request, "worlds/scene_form.html#validation", context)


@login_required
def scene_detail(request: HttpRequest, pk: int) -> HttpResponse:
    scene = _scene_for(request, pk)
    versions = Paginator(
        SceneVersion.objects.filter(parent=scene).select_related("created_by").order_by("-number"),
        VERSIONS_PER_PAGE,
    ).get_page(request.GET.get("page"))
    shown = scene.current_version
    wanted = request.GET.get("version")
    if wanted and wanted.isdigit():
        shown = SceneVersion.objects.filter(parent=scene, number=int(wanted)).first() or shown
    context = {
        "agent": scene.agent,
        "scene": scene,
        "tab": "scenes",
        "shown": shown,
        "summary": summary_of(shown),
        "lines": numbered(shown.source if shown else ""),
        "versions": versions,
        "page": versions,
        **page_flags(request.user, scene.agent.team),
    }
    return render(request, "worlds/scene_detail.html", context)


@login_required
@require_POST
def scene_archive(request: HttpRequest, pk: int) -> HttpResponse:
    scene = _scene_for(request, pk)
    return archive_or_restore(request, scene, services.archive_scene)


@login_required
def scene_test_create(request: HttpRequest, testset_pk: int) -> HttpResponse:
    """The old "New scene test" page: the test builder picks scenes now (checks/scene_mode.py), so
    its links and bookmarks land there, in scene mode."""
    test_set = get_object_or_404(TestSet.objects.visible_to(request.user), pk=testset_pk)
    return redirect(f"{reverse('checks:test-create', args=[test_set.pk])}?mode=scenes")
