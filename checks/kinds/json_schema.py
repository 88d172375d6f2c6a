"""json_schema: the output parses as JSON and validates against a JSON Schema.

The schema is checked when the check is saved (``check_schema`` of the draft named by ``$schema``,
2020-12 by default). ``format`` keywords are asserted (a user writing "format": "date" expects it to
be checked). The output is parsed as is: surrounding whitespace is fine, Markdown code fences are not.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from ._common import describe_output, failed, indeterminate, json_type, passed
from .base import Context, Evidence, FieldSpec, Verdict, object_schema
from .registry import Kind, register

MAX_SCHEMA_CHARS = 100_000
MAX_ERRORS = 100
_MESSAGE_CHARS = 300
_validators: dict[str, Any] = {}
_MAX_CACHED = 256


def _clean(config: dict[str, Any], errors: dict[str, str]) -> None:
    schema = config["schema"]
    if "schema" in errors or schema is None:
        return
    if not isinstance(schema, Mapping):
        errors["schema"] = f"must be a JSON Schema object, not {json_type(schema)}"
        return
    try:
        text = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        errors["schema"] = f"is not JSON: {exc}"
        return
    if len(text) > MAX_SCHEMA_CHARS:
        errors["schema"] = f"is too large ({len(text):,} characters of JSON; at most {MAX_SCHEMA_CHARS:,})"
        return
    outside = _external_refs(schema)
    if outside:
        errors["schema"] = (
            f"refers to another document ({outside[0]!r}); only references inside the schema "
            '("#/..." or an $id it declares) can be used, nothing is fetched'
        )
        return
    import jsonschema  # noqa: PLC0415 - 0.1 s of imports, only when a JSON Schema check is met
    from jsonschema.exceptions import SchemaError  # noqa: PLC0415
    from jsonschema.validators import validator_for  # noqa: PLC0415

    try:
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        errors["schema"] = f"is not a valid JSON Schema: {_cut(exc.message)}" + (
            f" (at {where})" if where else ""
        )
    except Exception as exc:  # noqa: BLE001 - e.g. an unknown $schema dialect
        errors["schema"] = f"is not a valid JSON Schema: {_cut(str(exc))}"


def _external_refs(schema: Any) -> list[str]:
    """``$ref``/``$dynamicRef`` values that point outside the schema (they would need a fetch)."""
    ids: set[str] = set()
    refs: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in ("$id", "id") and isinstance(value, str):
                    ids.add(value.split("#", 1)[0])
                elif key in ("$ref", "$dynamicRef") and isinstance(value, str):
                    refs.append(value)
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    outside = []
    for ref in refs:
        base = ref.split("#", 1)[0]
        if base and not any(i == base or i.endswith("/" + base) for i in ids):
            outside.append(ref)
    return outside


def _cut(text: str, limit: int = _MESSAGE_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _validator(schema: Mapping[str, Any]) -> Any:
    key = json.dumps(schema, sort_keys=True)
    validator = _validators.get(key)
    if validator is None:
        import jsonschema  # noqa: PLC0415 - see _clean
        from jsonschema.validators import validator_for  # noqa: PLC0415

        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        if len(_validators) >= _MAX_CACHED:
            _validators.clear()
        _validators[key] = validator
    return validator


_NOT_JSON = object()


def _parsed_output(evidence: Evidence) -> tuple[Any, str]:
    """(value, problem) of the output parsed as JSON, memoised per Evidence."""
    memo = evidence.memo()
    cached = memo.get("output_json")
    if cached is None:
        try:
            cached = (json.loads(evidence.output), "")
        except json.JSONDecodeError as exc:
            cached = (_NOT_JSON, f"{exc.msg} at line {exc.lineno}, column {exc.colno}")
        except (ValueError, RecursionError) as exc:
            cached = (_NOT_JSON, str(exc) or type(exc).__name__)
        memo["output_json"] = cached
    return cached


def _evaluate(config: Mapping[str, Any], evidence: Evidence, ctx: Context | None = None) -> Verdict:
    schema = config["schema"]
    title = schema.get("title") if isinstance(schema, Mapping) else None
    expected = "the output to be JSON valid against the schema" + (
        f" {title!r}" if isinstance(title, str) else ""
    )
    if not isinstance(evidence.output, str):
        return indeterminate(
            expected,
            "the agent reported no output"
            if evidence.output is None
            else f"the agent's output is {json_type(evidence.output)}, not text",
        )
    value, problem = _parsed_output(evidence)
    if value is _NOT_JSON:
        return failed(
            expected,
            f"the output is not valid JSON ({problem}); {describe_output(evidence.output)}",
            details={"json_error": problem},
        )
    errors = list(itertools.islice(_validator(schema).iter_errors(value), MAX_ERRORS))
    if not errors:
        return passed(expected, "it was")
    from jsonschema.exceptions import best_match  # noqa: PLC0415 - see _clean

    error = best_match(errors)
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    more = ""
    if len(errors) > 1:
        more = f" (and {'at least ' if len(errors) == MAX_ERRORS else ''}{len(errors) - 1:,} more problems)"
    message = _cut(error.message)
    at = "at the top level" if where == "/" else f"at {where}"
    return failed(
        expected,
        f"{at}: {message}{more}",
        details={"path": where, "message": message, "problems": len(errors)},
    )


KIND = register(
    Kind(
        name="json_schema",
        label="JSON matches schema",
        description="The response is JSON that validates against a JSON Schema.",
        fields=(
            FieldSpec(
                "schema",
                "JSON Schema",
                "json",
                required=True,
                help=(
                    "A JSON Schema object (draft 2020-12 unless $schema says otherwise); formats are checked."
                ),
            ),
        ),
        needs=frozenset({"output"}),
        json_schema=object_schema(
            {"schema": {"type": "object", "description": "A JSON Schema the output must validate against."}},
            "schema",
        ),
        evaluator=_evaluate,
        cleaner=_clean,
    )
)
