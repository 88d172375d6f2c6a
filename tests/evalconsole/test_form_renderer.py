"""The console's form renderer draws selects in Python: the HTML must be Django's, character for character."""

from __future__ import annotations

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates
from django.utils.safestring import mark_safe

from core.forms import FormRenderer, _out, _s


class Pickers(forms.Form):
    plain = forms.ChoiceField(choices=[("", "All agents"), ("1", "Support bot"), ("2", 'A <b> & "quoted"')])
    grouped = forms.ChoiceField(
        choices=[("Fruit", [("a", "Apple"), ("b", "Banana")]), ("c", "Loose"), ("Veg", [(3, 4.5)])],
        required=False,
        widget=forms.Select(
            attrs={"class": "picker", "data-on": True, "data-off": False, "hx-get": "/x?a=1&b=2"}
        ),
    )
    safe = forms.ChoiceField(choices=[(mark_safe("<i>v</i>"), mark_safe("<em>safe</em>")), ("z", "zed")])
    many = forms.MultipleChoiceField(choices=[("1", "One"), ("2", "Two"), ("3", "Three")], required=False)


@pytest.mark.parametrize(
    "data",
    [
        None,
        {"plain": "2", "grouped": "b", "safe": "z", "many": ["1", "3"]},
        {"plain": "nope", "grouped": "3", "many": ["2"]},
    ],
)
def test_selects_render_as_django_renders_them(data):
    fast = Pickers(data=data, renderer=FormRenderer())
    django = Pickers(data=data, renderer=DjangoTemplates())
    for name in fast.fields:
        assert str(fast[name]) == str(django[name]), name
    assert "selected" in str(fast["many"]) or data is None
    assert "A &lt;b&gt; &amp; &quot;quoted&quot;" in str(fast["plain"])
    assert '<optgroup label="Fruit">' in str(fast["grouped"])


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "A <b> & \"quoted\" 'x'",
        mark_safe("<i>safe</i>"),
        0,
        7,
        -12,
        12345678,
        True,
        4.5,
        None,
        forms.models.ModelChoiceIteratorValue(42, None),
        forms.models.ModelChoiceIteratorValue("<s>", None),
    ],
)
def test_the_option_text_is_the_engine_s(value):
    from django.template import engines

    drawn = engines["django"].from_string("{{ v }}|{{ v|stringformat:'s' }}").render({"v": value})
    assert f"{_out(value)}|{_s(value)}" == drawn


def test_other_widgets_still_use_the_templates():
    class Other(forms.Form):
        text = forms.CharField()
        radio = forms.ChoiceField(choices=[("a", "A")], widget=forms.RadioSelect)

    fast, django = Other(renderer=FormRenderer()), Other(renderer=DjangoTemplates())
    assert str(fast["text"]) == str(django["text"])
    assert str(fast["radio"]) == str(django["radio"])
    assert 'type="radio"' in str(fast["radio"])


def test_the_console_uses_it(settings):
    from django.forms.renderers import get_default_renderer

    assert settings.FORM_RENDERER == "core.forms.FormRenderer"
    assert isinstance(get_default_renderer(), FormRenderer)
