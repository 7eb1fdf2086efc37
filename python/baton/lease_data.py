"""Data kept under a session lease, over HTTP (``/leases/{session}/data``): values written only by
the lease's current holder with its fence, read by anyone with the read scope. The coordinator keeps
small values in the lease's shard and larger ones (up to 16 MiB) in R2; callers see bytes either way.

A writer is anything with ``session``, ``run_id`` and ``fence`` (a :class:`baton.SessionLease`).
A refused write raises :class:`baton.CoordinatorError` with code ``stale_fence``, ``not_holder`` or
``lease_expired`` and stores nothing. These calls block (urllib); run them in a thread from asyncio.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any, Iterator, NamedTuple, Protocol

from ._http import request_bytes, request_json
from .errors import CoordinatorError
from ._routes import route_path

__all__ = ["LeaseWriter", "LeaseDataItem", "put_lease_data", "get_lease_data", "list_lease_data", "delete_lease_data"]


class LeaseWriter(Protocol):
    session: str
    run_id: str
    fence: int


class LeaseDataItem(NamedTuple):
    key: str
    bytes: int
    #: The fence the value was written under.
    fence: int
    #: The value when the list page carried it (inline values), else None: fetch it with get_lease_data.
    inline: bytes | None


def _path(session: str) -> str:
    return route_path("/leases/{session}/data", session=session)


def put_lease_data(url: str, token: str, writer: LeaseWriter, key: str, value: bytes, *, if_absent: bool = False) -> dict[str, Any]:
    """Stores ``value`` under ``key`` if ``writer`` holds its lease now; with ``if_absent`` a value the key already has is kept."""
    headers = {"x-baton-run-id": writer.run_id, "x-baton-fence": str(writer.fence)}
    if if_absent:
        headers["x-baton-if-absent"] = "true"
    _, body = request_bytes(url, token, "PUT", f"{_path(writer.session)}?key={urllib.parse.quote(key, safe='')}", headers, value)
    return json.loads(body)


def get_lease_data(url: str, token: str, session: str, key: str) -> bytes | None:
    """The value under ``key``, or None when there is none."""
    try:
        _, body = request_bytes(url, token, "GET", f"{_path(session)}?key={urllib.parse.quote(key, safe='')}")
    except CoordinatorError as err:
        if err.status == 404:
            return None
        raise
    return body


def list_lease_data(url: str, token: str, session: str, *, prefix: str = "", after: str | None = None,
                    order: str = "asc") -> Iterator[LeaseDataItem]:
    """Every key under ``prefix`` in key order (``order="desc"``: reversed), page by page from ``after`` on."""
    while True:
        query = {"prefix": prefix, "order": order, **({} if after is None else {"after": after})}
        _, page = request_json(url, token, "GET", route_path("/leases/{session}/data/list", session=session) + f"?{urllib.parse.urlencode(query)}")
        for e in page["entries"]:
            inline = base64.b64decode(e["value"]) if "value" in e else None
            yield LeaseDataItem(e["key"], e["bytes"], e["fence"], inline)
        if page["next"] is None:
            return
        after = page["next"]


def delete_lease_data(url: str, token: str, writer: LeaseWriter, prefix: str) -> int:
    """Deletes every key under ``prefix`` (``""``: all) if ``writer`` holds its lease now; returns how many."""
    deleted = 0
    while True:
        _, answer = request_json(url, token, "POST", route_path("/leases/{session}/data/delete", session=writer.session),
                                 {"run_id": writer.run_id, "fence": writer.fence, "prefix": prefix})
        deleted += int(answer["deleted"])
        if not answer["more"]:
            return deleted
