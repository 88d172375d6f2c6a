"""The console's form renderer: Django's, with <select> drawn in Python; and ColumnChoiceField, a
ModelChoiceField whose options are read as columns.

Django draws a select through a template include per option (select.html, select_option.html and
attrs.html each time); a filter form with an agent and a test picker of 50 choices each then costs
about half a list page's server time. ``FormRenderer`` writes the same HTML, character for character,
for the stock select templates, and hands every other template (and a select whose templates were
changed) to Django's renderer.
"""

from __future__ import annotations

import html

from django import forms
from django.forms.renderers import DjangoTemplates
from django.template.base import render_value_in_context
from django.template.context import Context
from django.template.defaultfilters import stringformat
from django.utils.safestring import SafeData, mark_safe

SELECT = "django/forms/widgets/select.html"
OPTION = "django/forms/widgets/select_option.html"

_CONTEXT = Context(autoescape=True)  # what {{ }} does in the stock templates: localize, then escape


def _out(value) -> str:
    if type(value) is str:  # what the engine does to a plain str (no time zone, no l10n): escape it
        return html.escape(value)
    return render_value_in_context(value, _CONTEXT)


def _s(value) -> str:
    """``{{ value|stringformat:'s' }}`` (stringformat keeps a safe string safe)."""
    kind = type(value)
    if kind is forms.models.ModelChoiceIteratorValue and type(value.value) is int:
        return str(value.value)  # a model picker's option: digits, nothing to localize or escape
    if kind is int:
        return str(value)
    if kind is str:
        return html.escape(value)
    text = stringformat(value, "s")
    return _out(mark_safe(text) if isinstance(value, SafeData) else text)


def _attrs(attrs) -> str:
    """django/forms/widgets/attrs.html."""
    parts = []
    for name, value in attrs.items():
        if value is not False:
            parts.append(" " + _out(name))
            if value is not True:
                parts.append(f'="{_s(value)}"')
    return "".join(parts)


def render_select(widget: dict) -> str:
    """django/forms/widgets/select.html with select_option.html options, stripped as render() does."""
    parts = [f'<select name="{_out(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group_name, group_choices, _index in widget["optgroups"]:
        if group_name:
            parts.append(f'\n  <optgroup label="{_out(group_name)}">')
        for option in group_choices:
            value, attrs, label = _s(option["value"]), _attrs(option["attrs"]), _out(option["label"])
            parts.append(f'\n  <option value="{value}"{attrs}>{label}</option>\n')  # the file's own newline
        if group_name:
            parts.append("\n  </optgroup>")
    parts.append("\n</select>")
    return "".join(parts)


class FormRenderer(DjangoTemplates):
    """settings.FORM_RENDERER: Django's template renderer, selects drawn by ``render_select``."""

    def render(self, template_name, context, request=None):
        widget = context.get("widget") if template_name == SELECT else None
        stock = isinstance(widget, dict) and widget.get("template_name") == SELECT
        if stock and all(
            option.get("template_name") == OPTION
            for _, options, _ in widget["optgroups"]
            for option in options
        ):
            return render_select(widget)
        return super().render(template_name, context, request=request)


class ColumnChoices(forms.models.ModelChoiceIterator):
    """A picker's options from (pk, *label columns) tuples of its queryset instead of model instances (the
    runs page lists every agent and every test of the team, the check library every agent): the same
    values and labels."""

    def __iter__(self):
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        for pk, *columns in self.queryset.values_list("pk", *self.field.label_columns):
            yield (forms.models.ModelChoiceIteratorValue(pk, None), self.field.label_from_columns(*columns))


class ColumnChoiceField(forms.ModelChoiceField):
    """A ModelChoiceField whose options are drawn from columns: `label_from_columns(*label_columns)` must
    be what `label_from_instance` gives for the row. Validation is ModelChoiceField's own."""

    iterator = ColumnChoices

    def __init__(self, *args, label_columns=("name",), label_from_columns=str, **kwargs):
        super().__init__(*args, **kwargs)
        self.label_columns, self.label_from_columns = label_columns, label_from_columns
