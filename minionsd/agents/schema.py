"""A small checker for the tools' own JSON schemas (the subset they use: object, string,
integer, array of strings, enum, minLength/maxLength, minimum/maximum, required,
additionalProperties false), so a bad argument is refused with the field it concerns before
anything reaches the daemon. Standard library only.
"""

from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "object": (dict,),
                                       "array": (list,), "boolean": (bool,)}


class SchemaError(ValueError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"argument '{field}' {problem}")
        self.field = field
        self.problem = problem


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer" and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def check(schema: dict[str, Any], value: Any, field: str = "arguments") -> None:
    """Raise SchemaError naming the first field of `value` that `schema` refuses."""
    kind = schema.get("type")
    if kind is not None and not _type_ok(value, kind):
        raise SchemaError(field, f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(field, "must be one of " + ", ".join(map(str, schema["enum"])))
    if kind == "string":
        if len(value) < schema.get("minLength", 0):
            raise SchemaError(field, "must not be empty" if schema.get("minLength") == 1
                              else f"must be at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise SchemaError(field, f"must be at most {schema['maxLength']} characters")
    if kind == "integer":
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(field, f"must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(field, f"must be at most {schema['maximum']}")
    if kind == "array":
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(field, f"must have at most {schema['maxItems']} items")
        for index, item in enumerate(value):
            check(schema.get("items", {}), item, f"{field}[{index}]")
    if kind == "object":
        properties = schema.get("properties", {})
        prefix = "" if field == "arguments" else f"{field}."
        for name in schema.get("required", []):
            if name not in value or value[name] is None:
                raise SchemaError(prefix + name, "is required")
        for name, item in value.items():
            if name in properties:
                if item is not None:
                    check(properties[name], item, prefix + name)
            elif schema.get("additionalProperties", True) is False:
                raise SchemaError(prefix + name, "is not a known argument: expected "
                                  + ", ".join(properties))
