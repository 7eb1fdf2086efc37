"""A LangGraph checkpointer whose writes for a thread are fenced by baton (``langgraph-checkpoint``,
not a dependency of baton: install it yourself; tested with 4.2).

Each thread is a session lease (:func:`thread_session`); its checkpoints, channel values and pending
writes are data under that lease (:mod:`baton.lease_data`), stored only while the writer holds the
lease with its fence, by the coordinator's clock. A second worker on the same thread cannot fork it:
its writes are refused (``stale_fence``, ``not_holder``, ``lease_expired``), the saver raises
:class:`baton.LeaseLostError` and tells the lease (``lease.refused``), which cancels the lease's block.
Reads need no lease. Not fenced: what a node does outside the checkpointer.

The layout of keys and values is the one ``baton/client/langgraph`` (TypeScript) uses, and so is
the thread's session name: both languages fence the same thread under the same lease.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import random
import re
import urllib.parse
from typing import Any, AsyncIterator, Callable, Iterator, Optional, Sequence

from langgraph.checkpoint.base import (WRITES_IDX_MAP, BaseCheckpointSaver, ChannelVersions, Checkpoint,
                                       CheckpointMetadata, CheckpointTuple, get_checkpoint_id, get_checkpoint_metadata)
from langchain_core.runnables import RunnableConfig

from .errors import CoordinatorError, LeaseLostError
from .lease_data import LeaseWriter, delete_lease_data, get_lease_data, list_lease_data, put_lease_data

__all__ = ["BatonSaver", "thread_session"]

_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,47}")
_REFUSALS = {"stale_fence", "not_holder", "lease_expired", "lease_lost"}
_EMPTY = ["empty", ""]


def thread_session(thread_id: str, namespace: str = "langgraph") -> str:
    """The session lease of a LangGraph thread: ``<namespace>.<thread_id>`` when that is a valid
    session name, else ``<namespace>-`` and a SHA-256 of the thread id (as the TypeScript client)."""
    if not _NAMESPACE.fullmatch(namespace):
        raise ValueError(f"a namespace is 1-48 chars of A-Z, a-z, 0-9, '_' or '-', starting with a letter or digit: {namespace!r}")
    literal = f"{namespace}.{thread_id}"
    if _SESSION_NAME.fullmatch(literal):
        return literal
    return f"{namespace}-{hashlib.sha256(thread_id.encode()).hexdigest()[:40]}"


def _enc(part: str) -> str:
    return urllib.parse.quote(part, safe="-_.!~*'()")  # as JavaScript's encodeURIComponent


def _checkpoint_key(ns: str, cid: str) -> str:
    return f"c/{_enc(ns)}/{_enc(cid)}"


def _value_key(ns: str, channel: str, version: Any) -> str:
    return f"v/{_enc(ns)}/{_enc(channel)}/{_enc(str(version))}"


def _writes_prefix(ns: str, cid: str) -> str:
    return f"w/{_enc(ns)}/{_enc(cid)}/"


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class BatonSaver(BaseCheckpointSaver[str]):
    """Checkpoints under baton leases. ``lease``: the lease of the one thread this saver writes
    (a :class:`baton.SessionLease` on :func:`thread_session`); or ``lease_for(thread_id)``: the
    lease of any thread it writes. Without either it only reads. ``list`` needs a thread_id:
    every thread is its own lease, so there is no listing across threads."""

    def __init__(self, *, url: str, token: str, lease: Optional[LeaseWriter] = None,
                 lease_for: Optional[Callable[[str], LeaseWriter]] = None, namespace: str = "langgraph",
                 serde: Any = None) -> None:
        super().__init__(serde=serde)
        thread_session("x", namespace)  # validates the namespace
        self.url, self._token, self.namespace = url, token, namespace
        self._lease, self._lease_for = lease, lease_for

    # -- reads ----------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = config["configurable"].get("thread_id")
        if thread_id is None:
            return None
        ns = config["configurable"].get("checkpoint_ns", "")
        session = thread_session(str(thread_id), self.namespace)
        if cid := get_checkpoint_id(config):
            raw = get_lease_data(self.url, self._token, session, _checkpoint_key(ns, cid))
            return None if raw is None else self._tuple(session, str(thread_id), ns, cid, json.loads(raw))
        for item in list_lease_data(self.url, self._token, session, prefix=f"c/{_enc(ns)}/", order="desc"):
            cid = urllib.parse.unquote(item.key.split("/")[2])
            return self._tuple(session, str(thread_id), ns, cid, json.loads(self._value(session, item)))
        return None

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        """Newest first, of one thread (``configurable.thread_id`` is required)."""
        thread_id = (config or {}).get("configurable", {}).get("thread_id")
        if thread_id is None:
            raise ValueError("BatonSaver lists one thread at a time: pass configurable.thread_id (each thread is its own lease)")
        assert config is not None
        ns = config["configurable"].get("checkpoint_ns")
        only = get_checkpoint_id(config)
        before_id = get_checkpoint_id(before) if before else None
        session = thread_session(str(thread_id), self.namespace)
        prefix = "c/" if ns is None else f"c/{_enc(ns)}/"
        after = _checkpoint_key(ns, before_id) if ns is not None and before_id else None
        left = limit
        for item in list_lease_data(self.url, self._token, session, prefix=prefix, after=after, order="desc"):
            if left is not None and left <= 0:
                return
            _, ns_part, id_part = item.key.split("/")
            cid = urllib.parse.unquote(id_part)
            if (only and cid != only) or (before_id and cid >= before_id):
                continue
            stored = json.loads(self._value(session, item))
            if filter:
                metadata = self._load(stored["metadata"])
                if not all(metadata.get(k) == v for k, v in filter.items()):
                    continue
            if left is not None:
                left -= 1
            yield self._tuple(session, str(thread_id), urllib.parse.unquote(ns_part), cid, stored)

    # -- fenced writes --------------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """Writes the values of the channels in ``new_versions`` first, then the checkpoint that names them."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")  # type: ignore[misc]
        changed = [(_value_key(ns, ch, v), self._dump(values[ch]) if ch in values else _EMPTY) for ch, v in new_versions.items()]
        stored = {
            "parent": config["configurable"].get("checkpoint_id"),
            "checkpoint": self._dump(c),
            "metadata": self._dump(get_checkpoint_metadata(config, metadata)),
        }

        def write(writer: LeaseWriter) -> None:
            for key, value in changed:
                put_lease_data(self.url, self._token, writer, key, _json(value))
            put_lease_data(self.url, self._token, writer, _checkpoint_key(ns, checkpoint["id"]), _json(stored))

        self._write(thread_id, write)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        """Regular writes keep the first value stored for (task, index), as LangGraph's savers do; special ones replace."""
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        cid = config["configurable"]["checkpoint_id"]
        rows = [{"task_id": task_id, "task_path": task_path, "idx": WRITES_IDX_MAP.get(ch, i), "channel": ch, "value": self._dump(v)}
                for i, (ch, v) in enumerate(writes)]

        def write(writer: LeaseWriter) -> None:
            for row in rows:
                key = f"{_writes_prefix(ns, cid)}{_enc(task_id)}/{row['idx']}"
                put_lease_data(self.url, self._token, writer, key, _json(row), if_absent=row["idx"] >= 0)

        self._write(thread_id, write)

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint, value and write of the thread, under its lease."""
        self._write(str(thread_id), lambda writer: delete_lease_data(self.url, self._token, writer, ""))

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        """Versions that sort as strings, as LangGraph's own savers make them."""
        current_v = 0 if current is None else current if isinstance(current, int) else int(str(current).split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # -- async: the same calls in a thread ----------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit))):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    # -- inside ---------------------------------------------------------------------------------

    def _write(self, thread_id: str, fn: Callable[[LeaseWriter], Any]) -> None:
        """Runs one fenced write; a refusal becomes LeaseLostError, told to the lease (which cancels its block)."""
        session = thread_session(thread_id, self.namespace)
        lease = self._lease if self._lease is not None else (self._lease_for(thread_id) if self._lease_for else None)
        if lease is None:
            raise ValueError(f"BatonSaver writes thread {thread_id} only under its lease: pass lease= or lease_for=")
        if lease.session != session:
            raise ValueError(f"this BatonSaver holds the lease of {lease.session}, but thread {thread_id} is session {session}")
        try:
            fn(lease)
        except CoordinatorError as err:
            if err.code not in _REFUSALS:
                raise
            lost = LeaseLostError(f"baton refused a checkpoint write on LangGraph thread {thread_id} under fence {lease.fence} "
                                  f"({err.code}): another worker holds the thread now; stop this run", str(err.code))
            refused = getattr(lease, "refused", None)
            if callable(refused):
                refused(lost)
            raise lost from None

    def _value(self, session: str, item: Any) -> bytes:
        if item.inline is not None:
            return item.inline
        raw = get_lease_data(self.url, self._token, session, item.key)
        if raw is None:
            raise CoordinatorError("not_found", f"the value under {item.key} was deleted while it was listed", 404)
        return raw

    def _tuple(self, session: str, thread_id: str, ns: str, cid: str, stored: dict[str, Any]) -> CheckpointTuple:
        checkpoint = self._load(stored["checkpoint"])
        values: dict[str, Any] = {}
        # A version no value was written for has none (LangGraph's savers store only new_versions); a
        # value stored and since lost is a coordinator error (500, not 404) that get_lease_data raises.
        for channel, version in checkpoint["channel_versions"].items():
            raw = get_lease_data(self.url, self._token, session, _value_key(ns, channel, version))
            typed = _EMPTY if raw is None else json.loads(raw)
            if typed[0] != _EMPTY[0]:
                values[channel] = self._load(typed)
        rows = [json.loads(self._value(session, item)) for item in list_lease_data(self.url, self._token, session, prefix=_writes_prefix(ns, cid))]
        rows.sort(key=lambda r: (r["task_path"], r["task_id"], r["idx"]))
        parent = stored.get("parent")
        config = lambda i: {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": i}}  # noqa: E731
        return CheckpointTuple(
            config=config(cid),
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self._load(stored["metadata"]),
            parent_config=config(parent) if parent else None,
            pending_writes=[(r["task_id"], r["channel"], self._load(r["value"])) for r in rows],
        )

    def _dump(self, value: Any) -> list[str]:
        kind, data = self.serde.dumps_typed(value)
        return [kind, base64.b64encode(data).decode()]

    def _load(self, typed: Sequence[str]) -> Any:
        return self.serde.loads_typed((typed[0], base64.b64decode(typed[1])))
