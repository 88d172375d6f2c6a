"""`{{ check.name|trunc }}`: a name on one line, cut with … to fit its box, the full name on hover.

Registered as a template builtin (settings.TEMPLATES), so every template has it without `{% load %}`.
The look is the `.trunc` class of the console stylesheet.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.filter(is_safe=True)
def trunc(value: object) -> SafeString | str:
    text = "" if value is None else str(value)
    if not text:
        return ""
    return format_html('<span class="trunc" title="{}">{}</span>', text, text)
