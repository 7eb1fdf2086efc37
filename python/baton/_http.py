"""One blocking JSON request to the coordinator (urllib), and its asyncio wrapper."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from typing import Any

from .errors import CoordinatorError, UnreachableError


def base_url(url: str) -> str:
    return url.rstrip("/")


def request_json(url: str, token: str, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
    """Returns (status, parsed body) of a 2xx answer; raises CoordinatorError or UnreachableError."""
    full = base_url(url) + path
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {token}"}
    if data is not None:
        headers["content-type"] = "application/json"
    req = urllib.request.Request(full, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=max(0.001, timeout)) as res:
            status, text = res.status, res.read()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read() if err.fp is not None else b""
    except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise UnreachableError(f"cannot reach the coordinator at {base_url(url)}: {reason}", str(reason)) from None
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if 200 <= status < 300:
        if not isinstance(parsed, dict):
            reason = f"{method} {path} answered {status} with something that is not a baton answer"
            raise UnreachableError(f"{base_url(url)} does not look like a baton coordinator: {reason}", reason)
        return status, parsed
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        code = parsed["error"]
        message = str(parsed.get("message", code))
        raise CoordinatorError(f"the coordinator refused {method} {path} (HTTP {status}, {code}): {message}", status, code, parsed)
    raise CoordinatorError(f"the coordinator at {base_url(url)} answered HTTP {status}, not a baton answer (check the URL)", status, None)


async def arequest_json(url: str, token: str, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
    return await asyncio.to_thread(request_json, url, token, method, path, body, timeout)
