"""A small JSON Schema check for answers requested with `schema=`.

It covers what models are asked for in practice: `type` (one or a list),
`properties`, `required`, `additionalProperties`, `items`, `enum`, `const`,
`anyOf`/`oneOf`/`allOf`, length, size and number bounds. Unknown keywords are
ignored. A failure names the path of the offending value (`$.items[2].name`).
"""
import json
import re


class SchemaError(ValueError):
    """An answer that is not JSON or does not match the requested schema."""

    def __init__(self, message, path="$"):
        ValueError.__init__(self, "%s: %s" % (path, message))
        self.path = path


SchemaError.__module__ = "builtins"

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def parse_json(text):
    """The JSON value in a model's answer (a ```json fence around it is allowed)."""
    if not isinstance(text, str):
        return text
    match = _FENCE.match(text)
    body = match.group(1) if match else text
    try:
        return json.loads(body)
    except ValueError as error:
        raise SchemaError("the answer is not valid JSON (%s); it began %r" % (error, text[:80]))


def _type_ok(value, name):
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    return True


def _kind(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def validate(value, schema, path="$"):
    """Raise SchemaError unless `value` matches `schema`; return `value`."""
    if schema is True or not isinstance(schema, dict):
        return value
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_type_ok(value, name) for name in names):
            raise SchemaError("expected %s, got %s" % (" or ".join(names), _kind(value)), path)
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError("%r is not one of %r" % (value, schema["enum"]), path)
    if "const" in schema and value != schema["const"]:
        raise SchemaError("expected %r, got %r" % (schema["const"], value), path)
    _check_bounds(value, schema, path)
    if isinstance(value, dict):
        _check_object(value, schema, path)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            validate(item, schema["items"], "%s[%d]" % (path, index))
    _check_combinators(value, schema, path)
    return value


def _check_bounds(value, schema, path):
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise SchemaError("shorter than %d characters" % schema["minLength"], path)
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise SchemaError("longer than %d characters" % schema["maxLength"], path)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise SchemaError("fewer than %d items" % schema["minItems"], path)
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError("more than %d items" % schema["maxItems"], path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError("%r is below the minimum %r" % (value, schema["minimum"]), path)
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError("%r is above the maximum %r" % (value, schema["maximum"]), path)


def _check_object(value, schema, path):
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            raise SchemaError("missing required property %r" % name, path)
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        where = "%s.%s" % (path, name)
        if name in properties:
            validate(item, properties[name], where)
        elif extra is False:
            raise SchemaError("unexpected property %r" % name, path)
        elif isinstance(extra, dict):
            validate(item, extra, where)


def _check_combinators(value, schema, path):
    for sub in schema.get("allOf") or ():
        validate(value, sub, path)
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if not options:
            continue
        errors = []
        for sub in options:
            try:
                validate(value, sub, path)
                break
            except SchemaError as error:
                errors.append(str(error))
        else:
            raise SchemaError("matches none of the %s options (%s)" % (keyword, "; ".join(errors)), path)
