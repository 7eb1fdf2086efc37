"""The coordinator's R2 over HTTP (client/run-journal.ts uploadBlob / downloadBlob): the
:class:`~baton._run_blobs.Blobs` adapter ``serve`` hands its core."""

from __future__ import annotations

import json
from typing import Any

from ._http import arequest_bytes
from ._routes import route_path

__all__ = ["HttpBlobs"]

#: How long one blob upload or download may take (as BLOB_TIMEOUT_MS of client/run-journal.ts).
BLOB_TIMEOUT = 120.0


class HttpBlobs:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    async def upload(self, agent: str, message_id: int, token: int, run_key: str, raw: bytes) -> tuple[int, Any]:
        """PUT …/messages/{id}/blobs under the run's token and run key."""
        headers = {"x-baton-token": str(token), "x-baton-run-key": run_key}
        path = route_path("/agents/{agent}/messages/{id}/blobs", agent=agent, id=message_id)
        status, text = await arequest_bytes(self.url, self.token, "PUT", path, headers, raw, BLOB_TIMEOUT)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, None

    async def download(self, agent: str, message_id: int, blob: str) -> bytes:
        """GET …/messages/{id}/blobs/{blob}."""
        path = route_path("/agents/{agent}/messages/{id}/blobs/{blob}", agent=agent, id=message_id, blob=blob)
        _status, raw = await arequest_bytes(self.url, self.token, "GET", path, None, None, BLOB_TIMEOUT)
        return raw
