"""`{{ check.name|trunc }}`: a name on one line, cut with … to fit its box, the full name on hover;
`{% url %}`, Django's tag answering from URLs reversed once (core.urls) for no argument or one int; and
`{% memo a b %}…{% endmemo %}`, a fragment rendered once per process for each value of `a` and `b`.

Registered as a template builtin (settings.TEMPLATES), so every template has both without `{% load %}`.
The look is the `.trunc` class of the console stylesheet.
"""

from __future__ import annotations

import html
import unicodedata
import weakref
from datetime import datetime

from django import template
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template import defaulttags
from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import truncatechars
from django.urls import NoReverseMatch
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import get_current_timezone, template_localtime

from core.urls import pk_url, plain_url

register = template.Library()


@register.filter(is_safe=True)
def trunc(value: object) -> SafeString | str:
    text = "" if value is None else str(value)
    if not text:
        return ""
    if type(text) is str:  # format_html's own escaping, without its three calls a value (rows call this)
        text = html.escape(text)
        return SafeString(f'<span class="trunc" title="{text}">{text}</span>')
    return format_html('<span class="trunc" title="{}">{}</span>', text, text)


def esc(value: object) -> str:
    """The text of ``django.utils.html.escape(value)`` (which escapes even a safe string) as a plain str,
    without its lazy-argument wrapper: for rows drawn in Python, inside the markup they mark safe."""
    return html.escape(str(value))


def truncate(value: object, length: int) -> str:
    """``value|truncatechars:length`` (not escaped): text in NFC that fits is returned as it is (what the
    filter returns for it: it normalizes to NFC, and text no longer than `length` is never cut, combining
    marks or not), anything else goes through the filter."""
    text = str(value)
    if len(text) <= length and (text.isascii() or unicodedata.is_normalized("NFC", text)):
        return text
    return truncatechars(text, length)


_FAST = frozenset({"Y-m-d H:i:s", "Y-m-d H:i", "Y-m-d"})


def local_time(value, fmt: str = "Y-m-d H:i") -> str:
    """``{{ value|date:fmt }}`` in the current time zone, for rows drawn in Python. An aware datetime in
    the lists' formats (``Y-m-d H:i:s``, ``Y-m-d H:i``, ``Y-m-d``) is written directly (the date filter's
    ``"%04d"`` and ``"%02d"`` fields, ~90 calls a value less); anything else goes through the filter."""
    if fmt in _FAST and type(value) is datetime and value.utcoffset() is not None and settings.USE_TZ:
        v = value.astimezone(get_current_timezone())
        day = f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
        if fmt == "Y-m-d":
            return day
        minute = f"{day} {v.hour:02d}:{v.minute:02d}"
        return minute if fmt == "Y-m-d H:i" else f"{minute}:{v.second:02d}"
    return date_filter(template_localtime(value), fmt)


class URLNode(defaulttags.URLNode):
    """Django's `{% url %}` node; a URL with no argument or one non-negative int comes from core.urls
    (reverse() once per route: a list page's layout names a dozen URLs and its rows one or two each)."""

    def render(self, context):
        if self.kwargs or len(self.args) > 1:
            return super().render(context)
        args = [arg.resolve(context) for arg in self.args]
        if args and not (type(args[0]) is int and args[0] >= 0):
            return super().render(context)
        view_name = self.view_name.resolve(context)
        try:
            current_app = context.request.current_app
        except AttributeError:
            try:
                current_app = context.request.resolver_match.namespace
            except AttributeError:
                current_app = None
        url = ""
        try:
            url = pk_url(view_name, args[0], current_app) if args else plain_url(view_name, current_app)
        except NoReverseMatch:
            if self.asvar is None:
                raise
        if self.asvar:
            context[self.asvar] = url
            return ""
        return conditional_escape(url) if context.autoescape else url


@register.tag
def url(parser, token):
    node = defaulttags.url(parser, token)
    return URLNode(node.view_name, node.args, node.kwargs, node.asvar)


_MEMOS: weakref.WeakSet[MemoNode] = weakref.WeakSet()


@receiver(setting_changed)
def _forget_memos(**kwargs) -> None:
    """A changed setting (a test's override of DEBUG or STATIC_URL) may change a kept fragment."""
    for node in list(_MEMOS):
        node.rendered.clear()


class MemoNode(template.Node):
    """`{% memo a b %}…{% endmemo %}`: the fragment's text, rendered once per process for each value of the
    variables named (str, int, bool or None) and kept; the fragment must depend on nothing else but the
    settings (the layout's main navigation: the same links, one marked current, on every page of a route;
    the head's static links)."""

    def __init__(self, nodelist, variables):
        self.nodelist = nodelist
        self.variables = variables
        self.rendered: dict[tuple, str] = {}
        _MEMOS.add(self)

    def render(self, context):
        key = (context.autoescape, *(variable.resolve(context) for variable in self.variables))
        if not all(value is None or type(value) in (str, int, bool) for value in key):
            return self.nodelist.render(context)
        text = self.rendered.get(key)
        if text is None:
            text = self.rendered[key] = self.nodelist.render(context)
        return mark_safe(text)


@register.tag
def memo(parser, token):
    variables = [parser.compile_filter(bit) for bit in token.split_contents()[1:]]
    nodelist = parser.parse(("endmemo",))
    parser.delete_first_token()
    return MemoNode(nodelist, variables)
