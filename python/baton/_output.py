"""A run's live output on its way (client/core/output-batcher.ts): ``ctx.output`` batches many
small writes into few ``output`` frames (one every FLUSH seconds, or at once when a frame's worth
waits), one frame in flight at a time, under the run's token; everything written is sent before the
run's reply, failure or park. Without I/O: frames go through ``run.write``, timers through
``run.clock``. Readers are in ``_output_reader.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any, Optional, Union

from ._wire import LIMITS
from .errors import CoordinatorError, LeaseLostError

__all__ = ["OutputBatcher", "encode_chunk"]

FLUSH = 0.05
BATCH_BYTES: int = LIMITS["outputBatchBytes"]
BATCH_CHUNKS: int = LIMITS["outputBatchChunks"]
#: Bytes a run may have waiting before ``output`` holds its caller back.
MAX_PENDING = 1024 * 1024
STREAMS = ("stdout", "stderr", "text")


def encode_chunk(stream: str, raw: bytes) -> dict[str, Any]:
    """Text when the bytes are UTF-8 and JSON escaping does not blow them up, base64 otherwise."""
    try:
        text = raw.decode("utf-8")
        if len(json.dumps(text)) <= len(raw) * 1.34 + 16:
            return {"stream": stream, "text": text}
    except UnicodeDecodeError:
        pass
    return {"stream": stream, "base64": base64.b64encode(raw).decode("ascii")}


def _boundary(raw: bytes, at: int) -> int:
    """The largest cut at or before ``at`` that splits no UTF-8 character (the end holds back a lead byte still waiting for its rest)."""
    if at >= len(raw):
        for back in range(1, min(3, at) + 1):
            b = raw[at - back]
            if b & 0xC0 == 0x80:
                continue
            need = 4 if b >= 0xF0 else 3 if b >= 0xE0 else 2 if b >= 0xC0 else 1
            return at - back if need > back else at
        return at
    cut = at
    while cut > 0 and cut > at - 3 and raw[cut] & 0xC0 == 0x80:
        cut -= 1
    return at if raw[cut] & 0xC0 == 0x80 else cut


class OutputBatcher:
    """One run's output on its way: ``write`` queues, frames go through ``run.write`` (its token, the socket's pacing)."""

    def __init__(self, run: Any) -> None:
        self._run = run
        self._segments: list[tuple[str, bytearray]] = []
        self._pending = 0
        self._timer: Optional[Any] = None
        self._lock = asyncio.Lock()
        self._stopped = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def write(self, data: Union[str, bytes, bytearray], stream: str = "text") -> None:
        if stream not in STREAMS:
            raise ValueError(f"stream is one of {', '.join(STREAMS)}")
        if self._stopped:
            return
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        if not raw:
            return
        if self._segments and self._segments[-1][0] == stream:
            self._segments[-1][1].extend(raw)
        else:
            self._segments.append((stream, bytearray(raw)))
        self._pending += len(raw)
        if self._pending >= BATCH_BYTES:
            self._spawn()
        elif self._timer is None:
            self._timer = self._run.clock.after(FLUSH, self._spawn)
        if self._pending >= MAX_PENDING:
            await self._send(final=False)

    async def flush(self) -> None:
        """Sends everything waiting (a cut character too); returns once it was answered."""
        await self._send(final=True)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self._send(final=False))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, final: bool) -> None:
        if self._timer is not None:
            self._timer()
            self._timer = None
        async with self._lock:
            sent = False
            while not self._stopped:
                chunks = self._take(final)
                if not chunks:
                    break
                sent = True
                try:
                    await self._run.write({"type": "output", "id": self._run.id, "token": self._run.token, "chunks": chunks})
                except (LeaseLostError, CoordinatorError):
                    # Refused: this attempt no longer holds the message; nothing more of it is sent.
                    self._stopped = True
                    self._segments.clear()
                    self._pending = 0
                if not final and self._pending < BATCH_BYTES:
                    break
            if sent and self._pending > 0 and not self._stopped and self._timer is None:
                self._timer = self._run.clock.after(FLUSH, self._spawn)

    def _take(self, final: bool) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        room = BATCH_BYTES
        while self._segments and room > 0 and len(chunks) < BATCH_CHUNKS:
            stream, raw = self._segments[0]
            cut = min(len(raw), room)
            alone = len(self._segments) == 1
            if cut < len(raw) or (alone and not final):
                cut = _boundary(bytes(raw), cut)
            if cut == 0:
                if chunks or (alone and not final):
                    break
                cut = min(len(raw), room)
            chunks.append(encode_chunk(stream, bytes(raw[:cut])))
            room -= cut
            self._pending -= cut
            del raw[:cut]
            if raw:
                break
            self._segments.pop(0)
        return chunks
