"""Large values (client/core/run-blobs.ts): a step result over 48 KiB, a message checkpoint over
16 KiB or a reply over 32 KiB is uploaded under the run's token and run key before the write that
commits it; a replay reads it back. What a refusal means for the run is decided here; the transfer
itself is a :class:`Blobs` adapter (``_http_blobs.HttpBlobs``: the coordinator's R2 over HTTP).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

from ._journal_rules import LEASE_GONE, MESSAGE_GONE
from ._run import Run
from ._wire import LIMITS
from .errors import CoordinatorError, LeaseLostError

__all__ = ["Blobs", "download", "upload"]

BLOB_BYTES: int = LIMITS["blobBytes"]


class Blobs(Protocol):
    async def upload(self, agent: str, message_id: int, token: int, run_key: str, raw: bytes) -> tuple[int, Any]:
        """Stages ``raw``; returns how the coordinator answered (its status and its JSON body, None
        when it was not JSON). Raises CoordinatorError when it refused, UnreachableError when it could not be asked."""
        ...

    async def download(self, agent: str, message_id: int, blob: str) -> bytes: ...


async def upload(blobs: Optional[Blobs], run: Run, raw: bytes, what: str, event: Callable[..., None]) -> str:
    """The blob id a later write (step, checkpoint, park or reply) commits. A refusal that means the
    message is gone raises LeaseLostError, as the same refusal of a frame does."""
    if len(raw) > BLOB_BYTES:
        raise ValueError(f"{what} is at most {BLOB_BYTES} bytes, got {len(raw)}")
    run_key = run.frame.get("run_key")
    if blobs is None or not isinstance(run_key, str) or not isinstance(run.token, int):
        raise ValueError(f"{what} of {len(raw)} bytes needs a coordinator with large values (R2)")
    try:
        status, staged = await blobs.upload(run.port.agent, run.id, run.token, run_key, raw)
    except CoordinatorError as refusal:
        code = str(refusal.code)
        event(type="refused", frame="blob", code=code, message=refusal.details.get("message"))
        if code in MESSAGE_GONE or code in LEASE_GONE:
            raise LeaseLostError(f"the coordinator refused the blob upload: {code}", code) from None
        raise
    blob = staged.get("blob") if isinstance(staged, dict) else None
    if status != 201 or not isinstance(blob, str) or staged.get("bytes") != len(raw):
        raise CoordinatorError(None, f"the coordinator answered the upload with HTTP {status} and no staged blob", status,
                               staged if isinstance(staged, dict) else None)
    event(type="blob_uploaded", id=run.id, token=run.token, blob=blob, bytes=len(raw))
    return blob


async def download(blobs: Optional[Blobs], run: Run, blob: str) -> bytes:
    """The bytes of blob ``blob`` of this run's message, as uploaded."""
    if blobs is None:
        raise ValueError(f"blob {blob} cannot be read: this runner has no way to read large values")
    return await blobs.download(run.port.agent, run.id, blob)
