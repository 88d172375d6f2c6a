"""The OpenAPI document: valid, warning-free, every body typed, check config per kind from the registry."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    import yaml

    out = io.StringIO()
    with django_db_blocker.unblock():
        # --fail-on-warn: an untyped body, an unresolvable serializer or an enum clash fails here.
        call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    return yaml.safe_load(out.getvalue())


def _resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def test_every_body_is_typed(schema):
    for path, method, operation in _operations(schema):
        for media in operation.get("requestBody", {}).get("content", {}).values():
            body = _resolve(schema, media["schema"])
            assert body.get("properties") or body.get("oneOf") or body.get("items"), (
                f"{method} {path} request"
            )
        for code, response in operation["responses"].items():
            for media in response.get("content", {}).values():
                body = _resolve(schema, media["schema"])
                assert body.get("properties") or body.get("oneOf") or body.get("items") or body.get("type"), (
                    f"{method} {path} {code}"
                )


def test_every_operation_documents_its_errors(schema):
    for path, method, operation in _operations(schema):
        if path.startswith("/api/v1/"):
            assert {"400", "401", "403", "404", "429"} <= set(operation["responses"]), f"{method} {path}"
            assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_check_bodies_are_one_schema_per_kind(schema):
    from checks import kinds
    from evalconsole.schema import kind_config_schema

    names = [kind.name for kind in kinds.all_kinds()]
    create = schema["paths"]["/api/v1/checks/"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    create = _resolve(schema, create)
    assert create["discriminator"]["propertyName"] == "kind"
    assert list(create["discriminator"]["mapping"]) == names
    for kind in kinds.all_kinds():
        variant = _resolve(schema, {"$ref": create["discriminator"]["mapping"][kind.name]})
        assert variant["properties"]["kind"]["enum"] == [kind.name]
        assert variant["properties"]["config"] == kind_config_schema(kind)
        assert {"agent", "name", "kind"} <= set(variant["required"])
    shown = schema["paths"]["/api/v1/checks/{id}/"]["get"]["responses"]["200"]["content"]["application/json"]
    assert list(_resolve(schema, shown["schema"])["discriminator"]["mapping"]) == names


def test_kind_schemas_are_openapi_30():
    from evalconsole.schema import openapi30

    assert openapi30({"type": ["integer", "null"], "minimum": 0}) == {
        "type": "integer",
        "minimum": 0,
        "nullable": True,
    }
    assert openapi30({"type": ["string", "null"], "enum": ["any", None]}) == {
        "type": "string",
        "enum": ["any", None],
        "nullable": True,
    }
    assert openapi30({"properties": {"a": {"const": 3}}}) == {"properties": {"a": {"enum": [3]}}}


def test_schema_and_docs_are_public_and_offline(client):
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn." not in docs.content and b"/static/drf_spectacular_sidecar/" in docs.content
    assert client.get("/api/redoc/").status_code == 200


@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_reference_nothing_outside_the_server(client, path):
    """The HTML and the CSS it links name no other host; the JS bundles (which hold URLs such as the
    Redocly logo's) are fenced in by a Content-Security-Policy that allows this server only."""
    import re

    from django.contrib.staticfiles import finders

    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert re.findall(r"(?:https?:)?//[\w.-]+", html.replace("http://testserver", "")) == []
    for asset in re.findall(r'(?:src|href)="/static/([^"]+)"', html):
        text = Path(finders.find(asset)).read_text(errors="replace")
        assert "fonts.googleapis.com" not in text and "fonts.gstatic.com" not in text, asset
        if asset.endswith(".css"):
            assert re.findall(r"(?:url\(\s*['\"]?|@import\s+['\"])(?:https?:)?//", text) == [], asset
    policy = dict(
        part.strip().split(None, 1) for part in response.headers["Content-Security-Policy"].split(";")
    )
    assert policy["default-src"] == "'self'"
    for directive, sources in policy.items():
        assert not re.search(r"https?:|\*", sources), f"{directive} {sources}"
    assert {"img-src", "font-src", "connect-src", "script-src", "style-src"} <= set(policy)


def test_unknown_api_urls_are_json_404(client):
    for path in ("/api/v1/nope/", "/api/v1/agents/1.5/", "/api/v2/"):
        response = client.post(path)
        assert response.status_code == 404 and response.json() == {"detail": "Not found."}


@pytest.mark.parametrize(
    ("name", "listed", "body", "added"),
    [("items", "ReviewItem", "SendRequest", {"201": "Sent"}), ("labels", "Label", "LabelWriteRequest", None)],
)
def test_a_queues_collections_list_paged_rows_and_add_a_body(schema, name, listed, body, added):
    """core.api.collection_action: GET lists the rows (paginated, no filter parameters), POST takes its body
    and answers its responses, each with its own summary."""
    item = schema["paths"][f"/api/v1/review-queues/{{id}}/{name}/"]
    get, post = item["get"], item["post"]
    assert [p["name"] for p in get["parameters"]] == ["id", "page", "page_size"]
    shown = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert shown == f"#/components/schemas/Paginated{listed}List"
    assert "requestBody" not in get
    sent = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert sent == f"#/components/schemas/{body}"
    assert [p["name"] for p in post["parameters"]] == ["id"]
    refs = {
        code: r["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        for code, r in post["responses"].items()
        if code in ("200", "201")
    }
    assert refs == (added or {"200": listed, "201": listed})
    assert get["summary"] and post["summary"] and post["description"] and get["summary"] != post["summary"]
