"""Blocking requests to the coordinator (urllib), and their asyncio wrappers: JSON answers, and
raw bytes for large values (blobs)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Optional

from .errors import CoordinatorError, UnreachableError


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def base_url(url: str) -> str:
    return url.rstrip("/")


def checked_url(raw: str) -> str:
    """The coordinator URL without trailing slashes. Anything but an http(s) URL with a host raises
    ValueError at once, in the CLI's words (cli/lib/config.ts checkedUrl): retrying cannot fix it."""
    url = base_url(str(raw))
    scheme = _SCHEME.match(url)
    if scheme is None:
        raise ValueError(f"not a URL: {url}")
    if scheme.group().lower() not in ("http:", "https:"):
        raise ValueError(f"not an http(s) URL: {url}")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # raises for a port that is not a number
    except ValueError:
        raise ValueError(f"not a URL: {url}") from None
    if not parts.hostname:
        raise ValueError(f"not a URL: {url}")
    return url


def _exchange(url: str, token: str, method: str, path: str, headers: Mapping[str, str], data: Optional[bytes],
              timeout: float) -> tuple[int, bytes]:
    """(status, body) of any HTTP answer; raises UnreachableError when there is none."""
    req = urllib.request.Request(checked_url(url) + path, data=data, headers={"authorization": f"Bearer {token}", **headers},
                                 method=method)
    try:
        with urllib.request.urlopen(req, timeout=max(0.001, timeout)) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read() if err.fp is not None else b""
    except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise UnreachableError(f"cannot reach the coordinator at {base_url(url)}: {reason}", str(reason)) from None


def _parse(text: bytes) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _refusal(url: str, method: str, path: str, status: int, parsed: Any) -> CoordinatorError:
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        code = parsed["error"]
        message = str(parsed.get("message", code))
        # As client/http.ts words them for people: no retry can fix these two.
        if code == "unauthorized":
            return CoordinatorError(code, f"the coordinator at {base_url(url)} refused the token", status, parsed)
        if code == "bad_name":
            return CoordinatorError(code, f"not a valid name: {message[:1].lower()}{message[1:]}", status, parsed)
        return CoordinatorError(code, f"the coordinator refused {method} {path} (HTTP {status}, {code}): {message}", status, parsed)
    return CoordinatorError(None, f"the coordinator at {base_url(url)} answered HTTP {status}, not a baton answer (check the URL)", status)


def request_json(url: str, token: str, method: str, path: str, body: Any = None, timeout: float = 30.0,
                 headers: Optional[Mapping[str, str]] = None) -> tuple[int, Any]:
    """Returns (status, parsed body) of a 2xx answer; raises CoordinatorError or UnreachableError."""
    data = None if body is None else json.dumps(body).encode()
    sent = {**({} if data is None else {"content-type": "application/json"}), **(headers or {})}
    status, text = _exchange(url, token, method, path, sent, data, timeout)
    parsed = _parse(text)
    if 200 <= status < 300:
        if not isinstance(parsed, dict):
            reason = f"{method} {path} answered {status} with something that is not a baton answer"
            raise UnreachableError(f"{base_url(url)} does not look like a baton coordinator: {reason}", reason)
        return status, parsed
    raise _refusal(url, method, path, status, parsed)


def request_bytes(url: str, token: str, method: str, path: str, headers: Optional[Mapping[str, str]] = None,
                  body: Optional[bytes] = None, timeout: float = 120.0) -> tuple[int, bytes]:
    """Returns (status, raw body) of a 2xx answer (``body`` is sent as is, with its Content-Length);
    raises CoordinatorError or UnreachableError as :func:`request_json` does."""
    sent = dict(headers or {})
    if body is not None:
        sent.setdefault("content-type", "application/octet-stream")
        sent["content-length"] = str(len(body))
    status, text = _exchange(url, token, method, path, sent, body, timeout)
    if 200 <= status < 300:
        return status, text
    raise _refusal(url, method, path, status, _parse(text))


async def arequest_json(url: str, token: str, method: str, path: str, body: Any = None, timeout: float = 30.0) -> tuple[int, Any]:
    return await asyncio.to_thread(request_json, url, token, method, path, body, timeout)


async def arequest_bytes(url: str, token: str, method: str, path: str, headers: Optional[Mapping[str, str]] = None,
                         body: Optional[bytes] = None, timeout: float = 120.0) -> tuple[int, bytes]:
    return await asyncio.to_thread(request_bytes, url, token, method, path, headers, body, timeout)
