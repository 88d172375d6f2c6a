"""Shared pieces of the REST API v1: the exception handler, pagination, safe fields, parser, filters.

Viewsets stay thin: they read through ``visible_to(user)`` querysets (another team's object is a 404),
validate shapes with serializers and hand every write to a service. The helpers here make the edge
cases uniform: a viewer's write is a 403 before any body validation, a reference to an object the user
cannot see is a 400 "does not exist" (never a leak), and odd input (NUL bytes, lone surrogates, deep
nesting, huge ids) is a 400, never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial
from types import BuiltinFunctionType, FunctionType, MethodType, SimpleNamespace
from typing import Any

import django_filters
from django import forms
from django.conf import settings
from django.core.exceptions import FieldDoesNotExist, ObjectDoesNotExist, RequestDataTooBig
from django.core.signals import setting_changed
from django.db import models
from django.db.models.manager import BaseManager
from django.dispatch import receiver
from django.utils import translation
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import ISO_8601, exceptions, pagination, serializers, status
from rest_framework.decorators import action
from rest_framework.fields import SkipField
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.relations import PKOnlyObject
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from core import errors
from core.errors import DomainError
from core.ids import MAX_ID
from core.jsontext import json_text_problem
from core.listing import Paginator
from core.views import parse_flag

NON_FIELD_ERRORS = api_settings.NON_FIELD_ERRORS_KEY


# ----------------------------------------------------------------------------- pagination


class ApiPagination(pagination.PageNumberPagination):
    """`?page=N&page_size=M` (M up to 200); every list endpoint uses it with a stable ordering."""

    page_size_query_param = "page_size"
    max_page_size = 200
    django_paginator_class = Paginator  # no COUNT query for a first page that is not full

    def get_page_size(self, request):
        # A page_size that is not a positive whole number falls back to the default (DRF behaviour),
        # including huge or non-ASCII digit strings.
        raw = request.query_params.get(self.page_size_query_param, "")
        if raw and not (raw.isascii() and raw.isdigit() and len(raw) < 10):
            return self.page_size
        return super().get_page_size(request)

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param) or 1
        if isinstance(raw, str) and not (raw.isascii() and raw.isdigit() and len(raw) < 10) and raw != "last":
            raise exceptions.NotFound("Invalid page: expected a whole number.")
        return raw


# ----------------------------------------------------------------------------- the OpenAPI document


class DeployedSchemaGenerator(SchemaGenerator):
    """drf-spectacular's generator for the served document (/api/schema/): the public document of the
    project's own URLs is the same for every request of a process (its views and serializers are fixed
    per deploy), so the default one (no ``?version=``, the site's language) is built once (0.2-0.9 CPU-s a
    build here) and the same document answered after. Any other (``?version=``, ``?lang=``, a non-public one
    filtered by the asker's permissions, one of other URLs) is built each time, as drf-spectacular does."""

    _documents: dict[type, dict] = {}

    def get_schema(self, request=None, public=False):
        default = (self.api_version, translation.get_language()) == (None, settings.LANGUAGE_CODE)
        if not (public and default and self.urlconf is None and self.patterns is None):
            return super().get_schema(request=request, public=public)
        document = self._documents.get(type(self))
        if document is None:
            document = self._documents[type(self)] = super().get_schema(request=request, public=public)
        return document


@receiver(setting_changed)
def _forget_the_document(**kwargs) -> None:
    """A changed setting (a test's override of SPECTACULAR_SETTINGS, REST_FRAMEWORK...) may change it."""
    DeployedSchemaGenerator._documents.clear()


# ----------------------------------------------------------------------------- one-object actions


def unpaged_action(**kwargs):
    """A viewset `@action` that answers one object, a launch or a download: no list filters, no pages."""
    return action(filterset_class=None, pagination_class=None, **kwargs)


class ExportNegotiation(DefaultContentNegotiation):
    """The export's `?format=` names the download, not a renderer: errors are always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def object_action(serializer, *, detail: bool, url_path: str, summary: str, description: str, missing: str):
    """`GET <url_path>`: one object shaped by `serializer`, or a 404 that says `missing` (its schema too)."""

    route = unpaged_action(detail=detail, methods=["get"], url_path=url_path, serializer_class=serializer)
    responses = {200: serializer, 404: OpenApiResponse(description=missing)}
    schema = extend_schema(summary=summary, description=description, responses=responses, filters=False)

    def decorate(view):
        return schema(route(view))

    return decorate


def collection_action(
    listed, *, list_summary: str, add_summary: str, add_description: str, request, responses
):
    """`GET|POST <object>/<name>/`: GET lists the object's rows shaped by `listed` (the view pages them; no
    list filters); POST adds to them (`request` body, `responses`). The route and both schemas."""

    route = action(detail=True, methods=["get", "post"], serializer_class=listed, filterset_class=None)
    listing = extend_schema(
        methods=["GET"], summary=list_summary, responses={200: listed(many=True)}, filters=False
    )
    adding = extend_schema(
        methods=["POST"],
        summary=add_summary,
        description=add_description,
        request=request,
        responses=responses,
    )

    def decorate(view):
        return listing(adding(route(view)))

    return decorate


def export_action():
    """`GET <object>/export/?format=…`: a download streamed by the action, its errors in JSON."""
    return unpaged_action(detail=True, methods=["get"], content_negotiation_class=ExportNegotiation)


# ----------------------------------------------------------------------------- parsing and fields


class SafeJSONParser(JSONParser):
    """JSON bodies; pathologically nested documents are a 400 (json raises RecursionError)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the document is nested too deeply.") from None


class StorableJSONField(serializers.JSONField):
    """A JSON value that every supported database can store."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        problem = json_text_problem(data)
        if problem:
            raise serializers.ValidationError(problem)
        return data


class StorableDictField(StorableJSONField):
    """A JSON object (typed as such in the schema)."""

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError("must be a JSON object")
        return super().to_internal_value(data)


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """An id of an object the requesting user can see; anything else "does not exist" (400, no leak).

    ``model`` must have a ``visible_to(user)`` queryset method. ``extra_filter`` narrows further (e.g.
    active objects only) with the same message.
    """

    default_error_messages = {
        "required": "This field is required.",
        "does_not_exist": "{noun} {pk_value} does not exist.",
        "incorrect_type": "must be an id (a whole number), not {data_type}.",
    }

    def __init__(
        self, model, *, noun: str | None = None, extra_filter: Mapping[str, Any] | None = None, **kwargs
    ):
        self.model = model
        self.noun = noun or model._meta.verbose_name.capitalize()
        self.extra_filter = dict(extra_filter or {})
        if not kwargs.get("read_only"):
            kwargs.setdefault("queryset", model.objects.none())
        super().__init__(**kwargs)

    def get_queryset(self):
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return self.model.objects.visible_to(user).filter(**self.extra_filter)

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("incorrect_type", data_type=type(data).__name__)
        if isinstance(data, str):
            if not (data.isascii() and data.strip().isdigit()):
                self.fail("incorrect_type", data_type="str")
            data = int(data)
        if not 1 <= data <= MAX_ID:
            self.fail("does_not_exist", noun=self.noun, pk_value=data)
        try:
            return self.get_queryset().get(pk=data)
        except self.model.DoesNotExist:
            self.fail("does_not_exist", noun=self.noun, pk_value=data)

    def fail(self, key, **kwargs):
        kwargs.setdefault("noun", self.noun)
        super().fail(key, **kwargs)


def validated_or_400(form: serializers.Serializer, rules: Callable[[dict], object] | None = None) -> dict:
    """`form.validated_data`, or a 400 naming every bad field once.

    The serializer checks shapes and `rules(fields)` (a service's validator, raising DomainError) the
    values. When some fields do not parse, the others still go through `rules`, with None for the ones
    that failed, so one response names every problem; those keep the serializer's message only.
    """
    if form.is_valid():
        return dict(form.validated_data)
    errors = dict(form.errors)
    data = form.initial_data
    if rules is not None and isinstance(data, Mapping) and NON_FIELD_ERRORS not in errors:
        parsed = type(form)(
            data={k: v for k, v in data.items() if k not in errors}, partial=True, context=form.context
        )
        if parsed.is_valid():
            try:
                rules({**dict.fromkeys(errors), **parsed.validated_data})
            except DomainError as exc:
                for key, message in exc.errors.items():
                    if key.split(".")[0] not in errors:
                        errors[NON_FIELD_ERRORS if key == "__all__" else key] = _as_list(message)
    raise exceptions.ValidationError(errors)


# ----------------------------------------------------------------------------- list rows


_CALLABLE = FunctionType | MethodType | BuiltinFunctionType | partial


def _call_all(method, get, instance):
    """A path ending in a manager's ``all`` (``source="version.things.all"``): DRF calls it (after
    ``inspect.signature`` tells it takes no argument, ~100 calls a row); anything else is DRF's path."""
    if getattr(method, "__func__", None) is BaseManager.all:
        try:
            return method()
        except (AttributeError, KeyError):  # DRF wraps these in its own ValueError
            pass
    return get(instance)


def _as_bool(field) -> Callable[[Any], Any]:
    slow = field.to_representation
    return lambda value: value if value is True or value is False else slow(value)


def datetime_representer(field: serializers.DateTimeField) -> Callable[[Any], Any]:
    """DRF's ISO 8601 text of an aware datetime (in the field's time zone, "Z" for UTC), with the time
    zone looked up once per list instead of once per value; None is None (DRF's null, without a call of
    the field); anything else takes DRF's own path."""
    slow = field.to_representation
    output_format = getattr(field, "format", api_settings.DATETIME_FORMAT)
    zone = field.timezone if hasattr(field, "timezone") else field.default_timezone()
    if zone is None or not isinstance(output_format, str) or output_format.lower() != ISO_8601:
        return slow

    def represent(value):
        if value is None:
            return None
        if type(value) is not datetime or value.utcoffset() is None:
            return slow(value)
        try:
            text = value.astimezone(zone).isoformat()
        except OverflowError:
            return slow(value)  # DRF's "overflow" error
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return represent


def _plain(field) -> Callable[[Any], Any]:
    """``field.to_representation`` itself, or a shortcut that answers the same for the common
    read-only field classes (their exact class: a subclass may represent differently)."""
    kind = type(field)
    if kind is serializers.ListSerializer:
        child = row_function(field.child)
        return lambda data: [child(item) for item in (data.all() if isinstance(data, BaseManager) else data)]
    if isinstance(field, serializers.Serializer) and not _own(kind, "to_representation"):
        return row_function(field)
    if kind is serializers.SerializerMethodField:
        return getattr(field.parent, field.method_name)
    if kind is serializers.DateTimeField:
        return datetime_representer(field)
    return {
        serializers.IntegerField: int,
        serializers.CharField: str,
        serializers.FloatField: float,
        serializers.BooleanField: _as_bool(field),
    }.get(kind) or field.to_representation


def _own(kind: type, name: str) -> bool:
    """Whether a serializer class overrides DRF's ``name`` (then its own code is what runs)."""
    return getattr(kind, name) is not getattr(serializers.Serializer, name)


def _foreign_key_id(serializer, field) -> str | None:
    """The id column (``task_id``) that a PrimaryKeyRelatedField of a ModelSerializer shows for a foreign
    key of its model to an integer primary key: DRF reads it through ``serializable_value`` and a
    ``PKOnlyObject`` (~12 calls a row). None for any other field."""
    model = getattr(getattr(type(serializer), "Meta", None), "model", None)
    if type(field) is not serializers.PrimaryKeyRelatedField or field.pk_field is not None or model is None:
        return None
    if len(field.source_attrs) != 1:
        return None
    try:
        found = model._meta.get_field(field.source_attrs[0])
    except FieldDoesNotExist:
        return None
    if not (found.concrete and (found.many_to_one or found.one_to_one)):
        return None
    return found.attname if isinstance(found.target_field, models.IntegerField) else None


def row_function(
    serializer: serializers.Serializer, sources: Mapping[str, str] | None = None
) -> Callable[[Any], dict]:
    """A function from an instance to exactly ``serializer.to_representation(instance)``, without DRF's
    per-field dispatch: list endpoints of 50 rows spend most of their serializer time there (bench/README.md
    "Serving"). Serializers with a ``to_representation`` of their own keep it; the fields' work is the
    same (method fields call the serializer's methods, nested serializers recurse). ``sources`` reads
    some fields from another attribute path (field name: dotted path), e.g. where a list's prefetch
    keeps related rows in a plain list (``Prefetch(to_attr=...)``) instead of the related manager."""
    if _own(type(serializer), "to_representation"):
        return serializer.to_representation
    plan = []
    for field in serializer._readable_fields:
        if sources and field.field_name in sources:  # this serializer's own bound copy of the field
            field.source = sources[field.field_name]
            field.source_attrs = field.source.split(".")
        # A plain path (or "*": the instance itself, as DRF's get_attribute of no attributes gives it)
        fast = type(field).get_attribute is serializers.Field.get_attribute
        attrs = (() if field.source == "*" else tuple(field.source_attrs)) if fast else None
        represent = _plain(field)
        column = _foreign_key_id(serializer, field)
        if column is not None:  # the id column itself; anything but an int there takes DRF's path
            attrs, slow = (column,), represent
            represent = lambda value, slow=slow: value if type(value) is int else slow(value)  # noqa: E731
        plan.append((field.field_name, attrs, field.get_attribute, represent))

    def row(instance) -> dict:
        # A plain `source` path is read with getattr along it (None at a missing related object), inline:
        # no call per field. Anything else (a dict, a callable at the end, an error, a field that reads
        # for itself) takes the field's own get_attribute, so the value is always the one DRF would read.
        mapping = isinstance(instance, Mapping)
        out = {}
        for name, attrs, get, represent in plan:
            try:
                if attrs is None or mapping:
                    value = get(instance)
                else:
                    value = instance
                    try:
                        for attr in attrs:
                            value = getattr(value, attr)
                    except ObjectDoesNotExist:
                        value = None
                    except Exception:  # noqa: BLE001 - DRF decides: a default, null, SkipField or its error
                        value = get(instance)
                    else:
                        if isinstance(value, _CALLABLE):
                            value = _call_all(value, get, instance)
            except SkipField:
                continue
            check = value.pk if isinstance(value, PKOnlyObject) else value
            out[name] = None if check is None else represent(value)
        return out

    return row


def list_rows(serializer_class, rows, context: dict, sources: Mapping[str, str] | None = None) -> list[dict]:
    """``serializer_class(rows, many=True, context=context).data`` as plain lists and dicts (``sources``:
    see row_function)."""
    row = row_function(serializer_class(context=context), sources)
    return [row(instance) for instance in rows]


def attach_rows(parents, to_attr: str, queryset, link: str, columns: tuple[str, ...], key: str = "pk"):
    """Gives each of ``parents`` the attribute ``to_attr``: the rows of ``queryset`` whose foreign key
    ``link`` (its name: ``"sample"``) is the parent's ``key``, in the queryset's order, each a plain object
    with ``columns`` as attributes (``scene__name`` as ``.scene.name``). One query (none without parents),
    like the ``Prefetch(to_attr=)`` it replaces on a list, without a model instance per row or the
    prefetch's filtered queryset per parent (~250 calls a row). Returns the parents as a list."""
    parents = list(parents)
    groups: dict[Any, list] = {}
    for parent in parents:
        setattr(parent, to_attr, groups.setdefault(getattr(parent, key), []))
    if not groups:
        return parents
    flat = [(i, name) for i, name in enumerate(columns) if "__" not in name]
    nested: dict[str, list[tuple[int, str]]] = {}
    for i, name in enumerate(columns):
        if "__" in name:
            head, _, rest = name.partition("__")
            if "__" in rest:
                raise ValueError(f"attach_rows reads one level of relation, not {name!r}")
            nested.setdefault(head, []).append((i, rest))
    # `<link>__pk__in`, not `<link>_id__in`: the same SQL (no join), without normalizing each id as a
    # related object (~20 calls an id).
    for values in queryset.filter(**{f"{link}__pk__in": list(groups)}).values_list(link, *columns):
        row = values[1:]
        item = SimpleNamespace(**{name: row[i] for i, name in flat})
        for head, parts in nested.items():  # a missing related row (every column None) is None
            found = any(row[i] is not None for i, _ in parts)
            setattr(item, head, SimpleNamespace(**{name: row[i] for i, name in parts}) if found else None)
        groups[values[0]].append(item)
    return parents


_PLAIN_PATH = re.compile(r"/(?!/)[A-Za-z0-9/_.~-]*")


def absolute_url(request, path: str) -> str:
    """``request.build_absolute_uri(path)``; for a plain absolute path (what reverse() gives for ids and
    slugs) the scheme and host are worked out once per request instead of once per row."""
    if not (_PLAIN_PATH.fullmatch(path) and "/./" not in path and "/../" not in path):
        return request.build_absolute_uri(path)
    base = request.__dict__.get("_absolute_url_base")
    if base is None:  # build_absolute_uri("/") is the scheme and host (as an URI), then "/"
        base = request.__dict__["_absolute_url_base"] = request.build_absolute_uri("/")[:-1]
    return base + path


# ----------------------------------------------------------------------------- filters


class VisibleModelChoiceFilter(django_filters.ModelChoiceFilter):
    """`?agent=ID` among what the user can see (another team's id is a 400, like an unknown one)."""

    def __init__(self, *args, model=None, **kwargs):
        self._model = model
        super().__init__(*args, queryset=self._visible, **kwargs)

    def _visible(self, request):
        return self._model.objects.visible_to(getattr(request, "user", None))


class StrictBooleanField(forms.NullBooleanField):
    """A query-string boolean: true/false, 1/0, yes/no, on/off or blank; anything else is invalid
    (Django's NullBooleanField quietly reads an unknown word as "not given")."""

    widget = forms.TextInput

    def to_python(self, value):
        if value is None or isinstance(value, bool):
            return value
        try:
            return parse_flag(str(value))
        except ValueError:
            raise forms.ValidationError(
                f"{str(value)[:40]!r} is not a boolean; use true or false", code="invalid"
            ) from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


# A list request whose query string names nothing but these is not filtered by its FilterSet's filters.
PAGE_PARAMETERS = frozenset({ApiPagination.page_query_param, ApiPagination.page_size_query_param})


class ListFilterSet(django_filters.FilterSet):
    """A list's filters. ``unfiltered(queryset)`` is what they make of a list that names no filter (only
    page and page_size): each filter skips an empty value, so the list is left as it is (subclasses add
    their defaults). The list then skips building the filters' form and pickers (~2,000 calls a request);
    tests/api/test_list_filters.py holds it to what the FilterSet itself does."""

    @classmethod
    def unfiltered(cls, queryset):
        return queryset


class ArchivedFilterSet(ListFilterSet):
    """Lists show active objects unless `?archived=true`; `?archived=maybe` is a 400 naming `archived`."""

    archived = StrictBooleanFilter(
        method="filter_archived", help_text="true: only archived ones; false (the default): only active ones."
    )

    @classmethod
    def unfiltered(cls, queryset):
        return queryset.filter(archived_at__isnull=True)

    def filter_queryset(self, queryset):
        if self.form.cleaned_data.get("archived") is None:
            queryset = queryset.filter(archived_at__isnull=True)
        return super().filter_queryset(queryset)

    def filter_archived(self, queryset, name, value):
        return queryset.filter(archived_at__isnull=not value)


# ----------------------------------------------------------------------------- errors


def _as_list(message) -> list:
    """A DomainError's message for a field: one message, or a list of them (a scene's problems)."""
    return list(message) if isinstance(message, list | tuple) else [message]


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        # Django's answer would be its HTML 400 page and a logged traceback (a SuspiciousOperation).
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        detail = f"The request body is larger than the limit of {limit:,} bytes; send less at a time."
        return Response({"detail": detail}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, errors.PermissionDenied):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, errors.Conflict):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, errors.DomainError):
        body = {("non_field_errors" if k == "__all__" else k): _as_list(v) for k, v in exc.errors.items()}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
