"""/api/schema/ answers drf-spectacular's document, built once per process (core.api.DeployedSchemaGenerator)
when it is the default one."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import Client, RequestFactory
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView

from core.api import DeployedSchemaGenerator

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_document_yet():
    DeployedSchemaGenerator._documents.clear()
    yield
    DeployedSchemaGenerator._documents.clear()


def test_the_document_is_built_once_and_is_drf_spectaculars(member):
    anonymous, signed_in = Client(), Client()
    signed_in.force_login(member)
    real = SchemaGenerator.get_schema
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, side_effect=real) as build:
        first = anonymous.get("/api/schema/")
        again = signed_in.get("/api/schema/")
        as_json = anonymous.get("/api/schema/?format=json")
    assert build.call_count == 1
    assert first.status_code == again.status_code == as_json.status_code == 200
    assert first.content == again.content and first["Content-Disposition"] == again["Content-Disposition"]
    response = SpectacularAPIView.as_view()(RequestFactory().get("/api/schema/"))  # built anew
    assert first.content == response.render().content
    assert as_json.json()["info"]["title"] == "evalconsole API"


@pytest.mark.parametrize("query", ["?version=2", "?lang=fr"])
def test_any_other_document_is_built_each_time(query):
    stand_in = {"openapi": "3.0.3"}
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, return_value=stand_in) as build:
        Client().get("/api/schema/" + query)
        Client().get("/api/schema/" + query)
    assert build.call_count == 2
    assert DeployedSchemaGenerator._documents == {}


def test_a_non_public_document_is_built_each_time():
    with mock.patch.object(SchemaGenerator, "get_schema", autospec=True, return_value={}) as build:
        DeployedSchemaGenerator().get_schema(public=False)
        DeployedSchemaGenerator().get_schema(public=False)
        DeployedSchemaGenerator(patterns=[]).get_schema(public=True)
    assert build.call_count == 3 and DeployedSchemaGenerator._documents == {}


def test_a_changed_setting_forgets_the_document():
    from django.test import override_settings

    DeployedSchemaGenerator._documents[DeployedSchemaGenerator] = {"openapi": "kept"}
    with override_settings(LANGUAGE_CODE="en-us"):
        pass
    assert DeployedSchemaGenerator._documents == {}
