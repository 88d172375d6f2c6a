"""drf-spectacular extensions: the OpenAPI 3 document at /api/schema/ types every body.

- Bearer `ect_` tokens as the security scheme;
- a check's `config` per kind, built from the kind registry's ``json_schema``: the check bodies are a
  ``oneOf`` with one component per kind and a discriminator on ``kind``, so a new kind module shows
  up in the schema without touching this file;
- the error bodies (400/401/403/404/409/429, with ``Retry-After``) on every operation
  (``add_error_responses``, a postprocessing hook).
"""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import ResolvedComponent

from checks import kinds


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "teams.authentication.ApiTokenAuthentication"
    name = "BearerToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "ect_<key_id>_<secret>",
            "description": "A personal API token: create one on the Tokens page, with "
            "`manage.py create_api_token USER` or `POST /api/v1/tokens/`.",
        }


# ----------------------------------------------------------------------------- check config per kind


def openapi30(schema: Any) -> Any:
    """A JSON Schema (draft 2020-12 style) rewritten for OpenAPI 3.0: `type: [X, "null"]` → `nullable`."""
    if isinstance(schema, list):
        return [openapi30(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: openapi30(value) for key, value in schema.items() if key not in ("$schema", "$id")}
    types = schema.get("type")
    if isinstance(types, list):
        rest = [t for t in types if t != "null"]
        if len(rest) == 1:
            out["type"] = rest[0]
        else:
            out.pop("type")
            out["anyOf"] = [*out.get("anyOf", []), *({"type": t} for t in rest)]
        if "null" in types:
            out["nullable"] = True
    if schema.get("const") is not None and "enum" not in schema:
        out["enum"] = [out.pop("const")]
    return out


def kind_config_schema(kind) -> dict[str, Any]:
    schema = openapi30(copy.deepcopy(kind.json_schema)) or {"type": "object"}
    schema.setdefault("type", "object")
    description = f"Config of a `{kind.name}` check ({kind.label})."
    if kind.description:
        description += f" {kind.description}"
    schema["description"] = description
    return schema


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


class CheckConfigFieldExtension(OpenApiSerializerFieldExtension):
    """A bare `config` (a PATCH without `kind`): any one kind's config."""

    target_class = "checks.serializers.CheckConfigField"

    def map_serializer_field(self, auto_schema, direction):
        return {
            "type": "object",
            "description": "The check kind's settings; its fields depend on `kind` (see the Check* schemas).",
            "anyOf": [kind_config_schema(kind) for kind in kinds.all_kinds()],
        }


class _PerKindCheckExtension(OpenApiSerializerExtension):
    """A check body as `oneOf` one component per kind, discriminated by `kind`."""

    def _component_base(self, direction) -> str:
        raise NotImplementedError

    def map_serializer(self, auto_schema, direction):
        base = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        suffix = "Request" if direction == "request" else ""
        mapping: dict[str, str] = {}
        for kind in kinds.all_kinds():
            variant = copy.deepcopy(base)
            properties = variant.setdefault("properties", {})
            kind_schema = {"type": "string", "enum": [kind.name], "description": kind.label}
            if properties.get("kind", {}).get("readOnly"):
                kind_schema["readOnly"] = True
            properties["kind"] = kind_schema
            config_schema = kind_config_schema(kind)
            if properties.get("config", {}).get("readOnly"):
                config_schema["readOnly"] = True
            properties["config"] = config_schema
            required = variant.setdefault("required", [])
            if "kind" not in required:
                required.append("kind")
            variant["x-check-kind"] = kind.name  # lets postprocess_enums leave the one-value enum inline
            name = f"{self._component_base(direction)}{_camel(kind.name)}{suffix}"
            component = ResolvedComponent(
                name=name, type=ResolvedComponent.SCHEMA, object=name, schema=variant
            )
            auto_schema.registry.register_on_missing(component)
            mapping[kind.name] = component.ref["$ref"]
        return {
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "kind", "mapping": mapping},
        }


class CheckSerializerExtension(_PerKindCheckExtension):
    target_class = "checks.serializers.CheckSerializer"

    def _component_base(self, direction):
        return "Check"


class CheckCreateSerializerExtension(_PerKindCheckExtension):
    target_class = "checks.serializers.CheckCreateSerializer"

    def _component_base(self, direction):
        return "CheckCreate"


def postprocess_enums(result, generator, request, public):
    """drf-spectacular's enum extraction, leaving each per-kind variant's one-value `kind` enum inline."""
    from drf_spectacular.hooks import postprocess_schema_enums

    schemas = result.get("components", {}).get("schemas", {})
    stashed = {}
    for name, schema in schemas.items():
        if isinstance(schema, dict) and "x-check-kind" in schema:
            stashed[name] = schema["properties"].pop("kind")
    result = postprocess_schema_enums(result, generator, request=request, public=public)
    for name, kind_schema in stashed.items():
        schema = result["components"]["schemas"][name]
        schema["properties"]["kind"] = kind_schema
        schema.pop("x-check-kind", None)
    return result


# ----------------------------------------------------------------------------- error responses

ERROR_SCHEMA = {
    "type": "object",
    "description": "`detail` for request-level errors; otherwise one list of messages per field "
    "(`non_field_errors` for the body as a whole). Nested fields are objects or lists of the same shape.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}

_ERRORS = {
    "400": "Invalid input: a message per field.",
    "401": "No credentials, or a malformed, unknown, expired or revoked token.",
    "403": "Your role does not allow this, or the token is read-only.",
    "404": "No such object among your teams' objects (another team's object is a 404 too), or no such page.",
    "429": "Too many requests for this token; retry after `Retry-After` seconds.",
}


def add_error_responses(result, generator, request, public):
    """Postprocessing hook: document the error answers every operation can give, with their body."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Error", ERROR_SCHEMA)
    ref = {"$ref": "#/components/schemas/Error"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            public_operation = operation.get("security") == [{}] or {} in (operation.get("security") or [])
            codes = ["400", "404", "429"] if public_operation else ["400", "401", "403", "404", "429"]
            for code in codes:
                if code in responses:
                    continue
                response: dict[str, Any] = {
                    "description": _ERRORS[code],
                    "content": {"application/json": {"schema": ref}},
                }
                if code == "429":
                    response["headers"] = {
                        "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}
                    }
                responses[code] = response
            if "409" in responses and "content" not in responses["409"]:
                responses["409"]["content"] = {"application/json": {"schema": ref}}
    return result
