"""The serve core alone (``baton._serve_core``, client/core/serve-core.ts): events in (opened,
frames, pongs, closed, stop), commands out (frames and requests on a fake link, a dial-again, timers
on a fake clock, blob transfers on a memory store), with no socket, no HTTP and no real time. The
first tests show the old shape is gone: no module of the core imports the socket, HTTP or the
system clock, and nothing in the client but ``_system_clock`` reads the time."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from baton._serve_core import ServeCore
from core_harness import HOLDER, STANDBY, nothing_sent, sent, served
from transcript_replay import FakeClock, FakeLink

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "baton"
#: The core, as client/core is in TypeScript; everything else in the package is a shell or an adapter.
CORE = ["_serve_core", "_work_loop", "_run", "_run_context", "_frame_journal", "_journal_rules", "_run_blobs", "_output",
        "_handler", "_serve_lease", "_clock", "_link"]
#: What the core may not reach, directly or through any module it imports (at the top or inside a function).
IO_MODULES = {"websockets", "urllib", "http", "socket", "ssl", "time", "subprocess", "threading", "uuid", "random"}
ADAPTERS = {"_socket", "_websocket", "_http", "_http_blobs", "_system_clock", "_output_reader", "serve", "session"}


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(baton modules, other top-level modules) that ``baton.<module>`` imports anywhere in its source."""
    inner: set[str] = set()
    outer: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))):
        if isinstance(node, ast.Import):
            outer.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                outer.add(str(node.module).split(".")[0])
            elif node.module:
                inner.add(node.module.split(".")[0])
            else:  # from . import x
                inner.update(alias.name for alias in node.names)
    return inner, outer - {"__future__"}


def test_no_module_of_the_core_reaches_the_socket_http_or_the_system_clock():
    seen: set[str] = set()
    todo = list(CORE)
    reached: dict[str, set[str]] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        inner, outer = imports_of(module)
        reached[module] = outer
        todo.extend(m for m in inner if (PACKAGE / f"{m}.py").exists())
    assert not seen & ADAPTERS, f"the core imports adapters: {sorted(seen & ADAPTERS)}"
    bad = {m: sorted(o & IO_MODULES) for m, o in reached.items() if o & IO_MODULES}
    assert not bad, f"core modules import I/O or time: {bad}"


def test_only_the_system_clock_reads_the_time_in_the_client():
    reading = re.compile(r"\bimport time\b|\btime\.(monotonic|time|perf_counter)\(|loop\.time\(|\.call_later\(")
    found = [f"{p.name}:{n}" for p in sorted(PACKAGE.glob("*.py")) if p.name != "_system_clock.py"
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) if reading.search(line)]
    assert not found, f"time read outside _system_clock.py: {found}"


def test_the_core_waits_only_on_the_clock_it_is_given():
    sleeping = re.compile(r"asyncio\.sleep\((?!0\))")
    found = [f"{m}:{n}" for m in CORE for n, line in enumerate((PACKAGE / f"{m}.py").read_text("utf-8").splitlines(), 1)
             if sleeping.search(line)]
    assert not found, f"the core sleeps on the loop's clock: {found}"


# -- driving the core ------------------------------------------------------------------------------


class MemoryBlobs:
    """The Blobs adapter in memory: what was staged, and a refusal to give when told."""

    def __init__(self) -> None:
        self.staged: dict[str, bytes] = {}
        self.refuse: Any = None

    async def upload(self, agent: str, message_id: int, token: int, run_key: str, raw: bytes) -> tuple[int, Any]:
        if self.refuse is not None:
            raise self.refuse
        blob = f"b-{len(self.staged) + 1:032x}"
        self.staged[blob] = raw
        return 201, {"blob": blob, "bytes": len(raw)}

    async def download(self, agent: str, message_id: int, blob: str) -> bytes:
        return self.staged[blob]


def test_a_sync_refused_rate_limited_waits_one_second_on_the_cores_clock():
    async def main() -> None:
        link, clock = FakeLink(), FakeClock()
        core = ServeCore("a", lambda m, c: asyncio.sleep(0), link, clock, "runner-1")
        async with asyncio.TaskGroup() as group:
            core.attach(group)
            link.is_open = True
            await core.opened(clock.now())
            await sent(link)  # the claim
            first = await sent(link)
            armed = clock.timers()
            link.answer({"type": "error", "code": "rate_limited", "message": "later", "req": first["req"]})
            await nothing_sent(link)
            assert clock.timers() == sorted(armed + [clock.now() + 1.0]), (armed, clock.timers())
            clock.advance(1.0)
            again = await sent(link)
            assert again["type"] == "sync" and again["after"] == 0 and again["req"] != first["req"], again
            link.close_now()

    asyncio.run(main())


@pytest.mark.parametrize("lease, reason", [(HOLDER, "the lease lapsed on the local clock"),
                                           (STANDBY, "the connection could not be proven alive in time")], ids=["holder", "standby"])
def test_a_pong_proves_for_one_ttl_from_its_ping_then_the_cores_clock_demotes_and_asks_the_link_to_dial_again(lease, reason):
    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "welcome", "agent": "a", "heartbeat_ttl_ms": 3000, "limits": {}})
        ping_sent = clock.now()
        clock.advance(0.5)
        core.pong(ping_sent)
        clock.advance(2.4)
        assert core.status["kind"] == lease_kind and link.reconnects == [], (core.status, link.reconnects)
        clock.advance(0.2)
        assert core.status == {"kind": "lapsed", "fence": 4}, core.status
        assert link.reconnects == [reason]

    lease_kind = "holder" if lease["held"] else "standby"
    events = asyncio.run(served(body, lease=lease))
    assert [e["type"] for e in events] == (["held"] if lease["held"] else []) + ["demoted"], events


def test_a_large_reply_is_staged_through_the_blobs_adapter_and_committed_by_the_reply_frame():
    blobs = MemoryBlobs()
    text = "y" * (40 * 1024)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 2, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 9,
                    "run_key": "k" * 16, "steps": []})
        reply = await sent(link)
        assert reply["type"] == "reply" and reply["text"] == "" and blobs.staged[reply["blob"]] == text.encode(), reply
        link.answer({"type": "result", "op": "reply", "req": reply["req"], "id": 2, "token": 9, "fence": 4, "key": reply["key"],
                     "duplicate": False})
        async with asyncio.timeout(2):
            while core.work.tasks:
                await asyncio.sleep(0)

    async def handler(message: Any, ctx: Any) -> str:
        return text

    events = asyncio.run(served(body, handler, blobs))
    assert [e["type"] for e in events] == ["held", "blob_uploaded", "ran"], events


def test_an_upload_refused_as_stale_stops_the_run_and_posts_nothing_for_it():
    from baton import CoordinatorError

    blobs = MemoryBlobs()
    blobs.refuse = CoordinatorError("stale_token", "refused", 409, {"error": "stale_token", "message": "an older token"})

    async def handler(message: Any, ctx: Any) -> str:
        return "z" * (40 * 1024)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 3, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 9,
                    "run_key": "k" * 16, "steps": []})
        async with asyncio.timeout(2):
            while not core.work.tasks:
                await asyncio.sleep(0)
            while core.work.tasks:
                await asyncio.sleep(0)
        await nothing_sent(link)

    events = asyncio.run(served(body, handler, blobs))
    assert [(e["type"], e.get("code")) for e in events] == [("held", None), ("refused", "stale_token")], events


@pytest.mark.parametrize("missing", ["url", "token", "machine"])
def test_the_core_is_built_from_adapters_not_from_a_url_and_token(missing: str):
    import inspect

    assert missing not in inspect.signature(ServeCore).parameters
    assert not hasattr(ServeCore, "start")
