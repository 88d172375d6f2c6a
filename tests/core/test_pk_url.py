"""core.urls.pk_url: what reverse(name, args=[pk]) gives, from a template reversed once."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, clear_script_prefix, reverse, set_script_prefix

from core.urls import pk_url, pk_url_former

NAMES = [
    "agents:agent-detail",
    "checks:check-detail",
    "checks:test-detail",
    "runs:run-detail",
    "reviews:queue-detail",
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pk", [0, 7, 12345678901234])
def test_same_as_reverse(name, pk):
    assert pk_url(name, pk) == reverse(name, args=[pk])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("pk", [0, 7, 12345678901234, "42"])
def test_the_former_of_a_page_gives_pk_url_s_answer(name, pk):
    assert pk_url_former(name)(pk) == pk_url(name, pk) == reverse(name, args=[pk])


def test_the_former_follows_the_script_prefix_it_was_made_under_and_reverse_s_errors():
    set_script_prefix("/console/")
    try:
        assert pk_url_former("runs:run-detail")(42) == "/console/runs/42/"
    finally:
        clear_script_prefix()
    former = pk_url_former("runs:run-detail")
    assert former(42) == "/runs/42/"
    with pytest.raises(NoReverseMatch):
        former(-1)
    with pytest.raises(NoReverseMatch):
        former(None)


def test_follows_the_script_prefix():
    set_script_prefix("/console/")
    try:
        assert pk_url("runs:run-detail", 42) == "/console/runs/42/" == reverse("runs:run-detail", args=[42])
    finally:
        clear_script_prefix()
    assert pk_url("runs:run-detail", 42) == "/runs/42/"


def test_anything_else_is_reverse_s_business():
    assert pk_url("runs:run-detail", "42") == "/runs/42/"
    with pytest.raises(NoReverseMatch):
        pk_url("runs:run-detail", None)
    with pytest.raises(NoReverseMatch):
        pk_url("runs:run-detail", -1)


def _render(text: str, **context) -> str:
    from django.template import engines

    return engines["django"].from_string(text).render(context)


@pytest.mark.parametrize(
    ("tag", "context", "expected"),
    [
        ("{% url 'runs:run-list' %}", {}, reverse("runs:run-list")),
        ("{% url 'runs:run-detail' pk %}", {"pk": 42}, reverse("runs:run-detail", args=[42])),
        ("{% url 'runs:run-detail' pk %}", {"pk": "42"}, reverse("runs:run-detail", args=["42"])),
        ("{% url 'runs:run-detail' pk=pk %}", {"pk": 9}, reverse("runs:run-detail", kwargs={"pk": 9})),
        ("{% url 'runs:run-detail' 5 as u %}[{{ u }}]", {}, f"[{reverse('runs:run-detail', args=[5])}]"),
        ("{% url 'runs:run-detail' pk as u %}[{{ u }}]", {"pk": None}, "[]"),
        ("{% url name pk %}", {"name": "checks:check-list", "pk": 3}, reverse("checks:check-list", args=[3])),
    ],
)
def test_the_url_tag_answers_as_django_s(tag, context, expected):
    assert _render(tag, **context) == expected


def test_the_url_tag_fails_as_django_s():
    with pytest.raises(NoReverseMatch):
        _render("{% url 'runs:run-detail' pk %}", pk=-1)
    with pytest.raises(NoReverseMatch):
        _render("{% url 'runs:no-such-page' %}")


def test_the_url_tag_follows_the_script_prefix():
    set_script_prefix("/console/")
    try:
        shown = _render("{% url 'runs:run-list' %}|{% url 'runs:run-detail' 4 %}")
        assert shown == "/console/runs/|/console/runs/4/"
    finally:
        clear_script_prefix()
    assert _render("{% url 'runs:run-list' %}") == "/runs/"


def test_a_former_without_a_template_asks_pk_url(monkeypatch):
    import core.urls

    monkeypatch.setattr(core.urls, "_url_parts", lambda *args: None)
    assert pk_url_former("runs:run-detail")(42) == "/runs/42/"
