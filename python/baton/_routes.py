"""Coordinator paths built from the route table (``ROUTE_PATHS``, generated from worker/wire/routes.ts),
as ``routePath`` does in the TypeScript client: a path the coordinator does not serve is a bug here,
raised before any request."""

from __future__ import annotations

import re
import urllib.parse

from ._wire_types import ROUTE_PATHS

_PARAM = re.compile(r"\{(\w+)\}")


def route_path(pattern: str, **params: "str | int") -> str:
    """``route_path("/agents/{agent}/messages", agent="x")`` → ``/agents/x/messages``; each value percent-encoded."""
    if pattern not in ROUTE_PATHS:
        raise ValueError(f"the coordinator has no route {pattern}")

    def value(match: "re.Match[str]") -> str:
        name = match.group(1)
        if name not in params:
            raise ValueError(f"route {pattern} needs {name}")
        return urllib.parse.quote(str(params[name]), safe="")

    return _PARAM.sub(value, pattern)
