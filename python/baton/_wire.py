"""The wire, checked against the JSON Schema generated from the TypeScript side's own schemas
(``wire-schema.json``, written by ``npm run wire-schema`` from worker/wire), so the two clients
cannot drift apart. A small validator for the keywords that file uses; a frame from the
coordinator that does not match is dropped, and one this client would send that does not match
is a bug, raised before it leaves.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from ._wire_types import LIMITS


@lru_cache(maxsize=1)
def _schemas() -> dict[str, Any]:
    return json.loads(resources.files("baton").joinpath("wire-schema.json").read_text("utf-8"))


__all__ = ["LIMITS", "client_field", "step_name_pattern", "valid", "valid_client_frame", "valid_server_frame"]


@lru_cache(maxsize=64)
def _pattern(source: str) -> re.Pattern[str] | None:
    # JavaScript's `$` (without the m flag) matches only at the end; Python's also before a final newline.
    if source.endswith("$") and not source.endswith("\\$"):
        source = source[:-1] + "\\Z"
    try:
        return re.compile(source)
    except re.error:
        # JavaScript's \p{..} classes have no Python equivalent in `re`; the coordinator checks those itself.
        return None


def _is_type(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True


def valid(value: Any, schema: dict[str, Any]) -> bool:
    """Whether ``value`` matches ``schema`` (the subset of JSON Schema that wire-schema.json uses)."""
    if "const" in schema and value != schema["const"]:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    kinds = schema.get("type")
    if kinds is not None and not any(_is_type(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        return False
    if "anyOf" in schema and not any(valid(value, s) for s in schema["anyOf"]):
        return False
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if valid(value, s)) != 1:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return False
        if "maximum" in schema and value > schema["maximum"]:
            return False
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return False
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            return False
        pattern = _pattern(schema["pattern"]) if "pattern" in schema else None
        if pattern is not None and not pattern.search(value):
            return False
    if isinstance(value, list) and "items" in schema:
        if not all(valid(v, schema["items"]) for v in value):
            return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if any(k not in value for k in schema.get("required", [])):
            return False
        for key, item in value.items():
            if key in props:
                if not valid(item, props[key]):
                    return False
            elif schema.get("additionalProperties") is False:
                return False
            elif isinstance(schema.get("additionalProperties"), dict) and not valid(item, schema["additionalProperties"]):
                return False
            if "propertyNames" in schema and not valid(key, schema["propertyNames"]):
                return False
    return True


def valid_server_frame(frame: Any) -> bool:
    """A frame from the coordinator, as the TypeScript client accepts it (worker/wire/server-frames.ts)."""
    return valid(frame, _schemas()["server_frame"])


def valid_client_frame(frame: Any) -> bool:
    """A frame for the coordinator, as the coordinator parses it (worker/wire/protocol.ts)."""
    return valid(frame, _schemas()["client_frame"])


@lru_cache(maxsize=None)
def client_field(frame_type: str, field: str) -> dict[str, Any]:
    """The schema of one field of one client frame type (e.g. ``("step", "name")``)."""
    for variant in _schemas()["client_frame"]["oneOf"]:
        props = variant.get("properties", {})
        if props.get("type", {}).get("const") == frame_type and field in props:
            return props[field]
    raise KeyError(f"the wire has no {frame_type}.{field}")


@lru_cache(maxsize=1)
def step_name_pattern() -> re.Pattern[str]:
    """STEP_NAME of worker/wire/protocol.ts, from the generated schema (use with ``fullmatch``)."""
    return re.compile(client_field("step", "name")["pattern"])
