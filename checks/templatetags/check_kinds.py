"""`{{ check.kind|kind_label }}`: a check kind's human label ("Tool usage" for tool_usage), as the forms
show it."""

from django import template

from checks import kinds

register = template.Library()


@register.filter
def kind_label(name: str) -> str:
    return dict(kinds.kind_choices()).get(name, name)
