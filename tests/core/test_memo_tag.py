"""`{% memo a b %}…{% endmemo %}` (core.templatetags.names): the fragment's text once per value."""

from __future__ import annotations

from unittest import mock

from django.template import Context, engines


def _template(text: str):
    return engines["django"].from_string(text)


def test_each_value_is_rendered_once_and_answered_after():
    template = _template("{% memo a b %}<{{ a }}|{{ b }}|{{ c }}>{% endmemo %}")
    node = template.template.nodelist[0]
    with mock.patch.object(node.nodelist, "render", wraps=node.nodelist.render) as render:
        assert template.render({"a": "x", "b": 1, "c": "first"}) == "<x|1|first>"
        assert template.render({"a": "x", "b": 1, "c": "second"}) == "<x|1|first>"  # kept: c is not a key
        assert template.render({"a": "y", "b": None, "c": "third"}) == "<y|None|third>"
    assert render.call_count == 2


def test_the_kept_text_is_safe_and_escaped_once():
    template = _template("{% memo a %}{{ a }}{% endmemo %}{% memo a %}{{ a|safe }}{% endmemo %}")
    assert template.render({"a": "<b>"}) == "&lt;b&gt;<b>"
    assert template.render({"a": "<b>"}) == "&lt;b&gt;<b>"


def test_autoescape_is_part_of_the_key():
    template = _template("{% memo a %}{{ a }}{% endmemo %}").template
    assert template.render(Context({"a": "<"})) == "&lt;"
    assert template.render(Context({"a": "<"}, autoescape=False)) == "<"


def test_values_of_other_kinds_are_rendered_each_time():
    template = _template("{% memo a %}{{ b }}{% endmemo %}")
    assert template.render({"a": ["list"], "b": 1}) == "1"
    assert template.render({"a": ["list"], "b": 2}) == "2"
    assert template.template.nodelist[0].rendered == {}


def test_no_variables_is_one_text():
    template = _template("{% memo %}{{ b }}{% endmemo %}")
    assert template.render({"b": 1}) == "1"
    assert template.render({"b": 2}) == "1"


def test_a_changed_setting_forgets_the_kept_text():
    from django.test import override_settings

    template = _template("{% memo %}{% load static %}{% static 'a.css' %}{% endmemo %}")
    assert template.render({}) == "/static/a.css"
    with override_settings(STATIC_URL="/assets/"):
        assert template.render({}) == "/assets/a.css"
    assert template.render({}) == "/static/a.css"
