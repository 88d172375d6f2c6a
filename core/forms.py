"""The console's form renderer: Django's, with <select> drawn in Python.

Django draws a select through a template include per option (select.html, select_option.html and
attrs.html each time); a filter form with an agent and a test picker of 50 choices each then costs
about half a list page's server time. ``FormRenderer`` writes the same HTML, character for character,
for the stock select templates, and hands every other template (and a select whose templates were
changed) to Django's renderer.
"""

from __future__ import annotations

from django.forms.renderers import DjangoTemplates
from django.template.base import render_value_in_context
from django.template.context import Context
from django.template.defaultfilters import stringformat
from django.utils.safestring import SafeData, mark_safe

SELECT = "django/forms/widgets/select.html"
OPTION = "django/forms/widgets/select_option.html"

_CONTEXT = Context(autoescape=True)  # what {{ }} does in the stock templates: localize, then escape


def _out(value) -> str:
    return render_value_in_context(value, _CONTEXT)


def _s(value) -> str:
    """``{{ value|stringformat:'s' }}`` (stringformat keeps a safe string safe)."""
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
            option.get("template_name") == OPTION for _, options, _ in widget["optgroups"] for option in options
        ):
            return render_select(widget)
        return super().render(template_name, context, request=request)
