"""Large values over HTTP (client/run-journal.ts uploadBlob / downloadBlob): a step result over
48 KiB, a message checkpoint over 16 KiB or a reply over 32 KiB is PUT to the coordinator's R2
under the run's token and run key before the write that commits it; a replay reads it back.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ._http import arequest_bytes
from ._journal_rules import LEASE_GONE, MESSAGE_GONE
from ._run import Run
from ._wire import LIMITS
from .errors import CoordinatorError, LeaseLostError
from ._routes import route_path

__all__ = ["download", "upload"]

BLOB_BYTES: int = LIMITS["blobBytes"]
#: How long one blob upload or download may take (as BLOB_TIMEOUT_MS of client/run-journal.ts).
BLOB_TIMEOUT = 120.0


def _blobs_path(agent: str, mid: int) -> str:
    return route_path("/agents/{agent}/messages/{id}/blobs", agent=agent, id=mid)


async def upload(url: str, token: str, run: Run, raw: bytes, what: str, event: Callable[..., None]) -> str:
    """PUT …/messages/{id}/blobs: the blob id a later write (step, checkpoint, park or reply) commits.
    A refusal that means the message is gone raises LeaseLostError, as the same refusal of a frame does."""
    if len(raw) > BLOB_BYTES:
        raise ValueError(f"{what} is at most {BLOB_BYTES} bytes, got {len(raw)}")
    run_key = run.frame.get("run_key")
    if not isinstance(run_key, str) or not isinstance(run.token, int):
        raise ValueError(f"{what} of {len(raw)} bytes needs a coordinator with large values (R2)")
    headers = {"x-baton-token": str(run.token), "x-baton-run-key": run_key}
    try:
        status, text = await arequest_bytes(url, token, "PUT", _blobs_path(run.port.agent, run.id), headers, raw, BLOB_TIMEOUT)
    except CoordinatorError as refusal:
        code = str(refusal.code)
        event(type="refused", frame="blob", code=code, message=refusal.details.get("message"))
        if code in MESSAGE_GONE or code in LEASE_GONE:
            raise LeaseLostError(f"the coordinator refused the blob upload: {code}", code) from None
        raise
    try:
        staged: Any = json.loads(text)
    except ValueError:
        staged = None
    blob = staged.get("blob") if isinstance(staged, dict) else None
    if status != 201 or not isinstance(blob, str) or staged.get("bytes") != len(raw):
        raise CoordinatorError(None, f"the coordinator answered the upload with HTTP {status} and no staged blob", status,
                               staged if isinstance(staged, dict) else None)
    event(type="blob_uploaded", id=run.id, token=run.token, blob=blob, bytes=len(raw))
    return blob


async def download(url: str, token: str, run: Run, blob: str) -> bytes:
    """GET …/messages/{id}/blobs/{blob}: the bytes as uploaded."""
    path = route_path("/agents/{agent}/messages/{id}/blobs/{blob}", agent=run.port.agent, id=run.id, blob=blob)
    _status, raw = await arequest_bytes(url, token, "GET", path, None, None, BLOB_TIMEOUT)
    return raw
