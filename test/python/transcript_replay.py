"""Replays one shared transcript (test/transcripts/*.json, format 1, described in its README.md)
against the Python core: the serve loop with a fake link (frames out collected, frames in
delivered, answers matched by ``req``) and a fake clock that moves only when the script says so.
The TypeScript core replays the same files (test/unit/transcripts.test.ts)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Any, Callable, Optional

from baton import WaitingForPersonError
from baton._link import NotConnected
from baton._serve_core import ServeCore
from baton._wire import valid_client_frame, valid_server_frame

WAIT = 2.0  # seconds an `out` or `await` entry may take, as the format says
QUIET_TURNS = 50  # event-loop turns that count as "nothing left to do"


class FakeClock:
    """Monotonic seconds that stand still; timers fire when the script advances the time."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._cancelled: set[int] = set()
        self._ids = itertools.count()

    def now(self) -> float:
        return self.t

    def after(self, delay: float, fn: Callable[[], None]) -> Callable[[], None]:
        ident = next(self._ids)
        heapq.heappush(self._timers, (self.t + max(0.0, delay), ident, fn))
        return lambda: self._cancelled.add(ident)

    def timers(self) -> list[float]:
        """When each armed timer is due, soonest first."""
        return sorted(at for at, ident, _ in self._timers if ident not in self._cancelled)

    def advance(self, seconds: float) -> None:
        until = self.t + seconds
        while self._timers and self._timers[0][0] <= until:
            at, ident, fn = heapq.heappop(self._timers)
            self.t = max(self.t, at)
            if ident not in self._cancelled:
                fn()
        self.t = until


class FakeLink:
    """The connection as the serve core sees it (``_link.Link``): what it sends is queued for the script to match."""

    def __init__(self) -> None:
        self.ttl = 60.0
        self.is_open = False
        #: Why the core asked to dial again, each time it did.
        self.reconnects: list[str] = []
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reqs = itertools.count(1)

    @property
    def open(self) -> bool:
        return self.is_open

    async def send(self, frame: dict[str, Any]) -> bool:
        if not self.is_open:
            return False
        assert valid_client_frame(frame), f"the core sent a frame the wire refuses: {frame}"
        self.sent.put_nowait(frame)
        return True

    async def request(self, frame: dict[str, Any], timeout: float = 10.0) -> dict[str, Any]:
        req = f"py{next(self._reqs)}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req] = fut
        try:
            if not await self.send({**frame, "req": req}):
                raise NotConnected("not connected")
            return await fut
        finally:
            self._pending.pop(req, None)

    def answer(self, frame: dict[str, Any]) -> bool:
        fut = self._pending.pop(frame["req"], None) if isinstance(frame.get("req"), str) else None
        if fut is None or fut.done():
            return False
        fut.set_result(frame)
        return True

    def close_now(self) -> None:
        self.is_open = False
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(NotConnected("connection closed"))
        self._pending.clear()

    def reconnect_now(self, reason: str) -> None:
        self.reconnects.append(reason)
        self.close_now()


def scripted_handler(actions: list[dict[str, Any]], calls: list[str]) -> Callable[..., Any]:
    """The transcript's handler: its actions in order, each hand-out from the top, its end logged last."""

    async def handler(message: Any, ctx: Any) -> Any:
        try:
            for action in actions:
                if "step" in action:
                    def fn(action: dict[str, Any] = action) -> Any:
                        calls.append(f"step {action['step']}")
                        return action["returns"]

                    await ctx.step(action["step"], fn)
                elif "effect" in action:
                    def run_effect(effect: Any, action: dict[str, Any] = action) -> Any:
                        calls.append(f"effect {action['effect']} {effect.key}")
                        return action["returns"]

                    await ctx.effect(action["effect"], run_effect, action.get("on_unknown", "ask"))
                elif "ask" in action:
                    answer = await ctx.ask(action["ask"], choices=action.get("choices"), name=action.get("name"))
                    calls.append(f"answer {answer.choice}")
                elif "checkpoint" in action:
                    await ctx.save_message_checkpoint(action["checkpoint"])
                elif "heartbeat" in action:
                    await ctx.heartbeat(action["heartbeat"])
                elif "wait" in action:
                    calls.append("waiting")
                    await ctx.lost_event.wait()
                elif "throw" in action:
                    raise RuntimeError(action["throw"])
                elif "reply" in action:
                    calls.append("replied")
                    return action["reply"]
                else:
                    raise AssertionError(f"unknown handler action {action}")
            calls.append("replied")
            return None
        except WaitingForPersonError:
            calls.append("asked")
            raise
        except BaseException as error:
            calls.append("aborted" if ctx.cancelled else f"threw: {error}")
            raise

    return handler


def _bind(expected: Any, actual: Any, names: dict[str, Any], path: str) -> None:
    """Deep equality where a string "$name" binds on first sight and must match after."""
    if isinstance(expected, str) and expected.startswith("$"):
        if expected in names:
            assert actual == names[expected], f"{path}: {actual!r} is not {expected} = {names[expected]!r}"
        else:
            assert isinstance(actual, str), f"{path}: {actual!r} cannot bind {expected}"
            names[expected] = actual
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            _bind(expected[key], actual[key], names, f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            _bind(e, a, names, f"{path}[{i}]")
        return
    assert actual == expected and type(actual) is not bool or actual is expected, f"{path}: {actual!r} != {expected!r}"


def _substitute(frame: Any, names: dict[str, Any]) -> Any:
    if isinstance(frame, str) and frame.startswith("$"):
        assert frame in names, f"{frame} is used before it was bound"
        return names[frame]
    if isinstance(frame, dict):
        return {k: _substitute(v, names) for k, v in frame.items()}
    if isinstance(frame, list):
        return [_substitute(v, names) for v in frame]
    return frame


async def _turns(n: int = QUIET_TURNS) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _until(condition: Callable[[], bool], what: str) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.001)
    assert condition(), what


async def replay(transcript: dict[str, Any]) -> list[str]:
    """Runs the script; returns the handler's call log (the caller compares it with ``calls``)."""
    assert transcript["format"] == 1, transcript["format"]
    runner = transcript["runner"]
    calls: list[str] = []
    link, clock, names = FakeLink(), FakeClock(), {}
    loop = ServeCore(transcript["agent"], scripted_handler(transcript["handler"], calls), link, clock, runner["runner_id"],
                     concurrency=runner.get("concurrency", 1), priority=runner.get("priority", 0), cursor=runner.get("cursor", 0))
    async with asyncio.TaskGroup() as group:
        loop.attach(group)
        for i, entry in enumerate(transcript["script"]):
            ((kind, value),) = entry.items()
            where = f"script[{i}] {kind}"
            if kind == "open":
                link.is_open = True
                await loop.opened(clock.now())
            elif kind == "in":
                frame = _substitute(value, names)
                assert valid_server_frame(frame), f"{where}: the transcript's frame does not match the wire: {frame}"
                if frame["type"] in ("result", "error") and isinstance(frame.get("req"), str):
                    assert link.answer(frame), f"{where}: nothing waits for an answer to {frame['req']}"
                else:
                    loop.frame(frame)
            elif kind == "out":
                try:
                    async with asyncio.timeout(WAIT):
                        sent = await link.sent.get()
                except TimeoutError:
                    raise AssertionError(f"{where}: the core sent nothing; expected {value}") from None
                _bind(value, sent, names, where)
            elif kind == "await":
                await _until(lambda: value in calls, f"{where}: the handler never logged {value!r} (calls: {calls})")
            elif kind == "quiet":
                await _turns()
                assert link.sent.empty(), f"{where}: the core sent {link.sent.get_nowait()}"
            elif kind == "closed":
                link.close_now()
                await loop.closed()
            elif kind == "advance_ms":
                clock.advance(value / 1000)
            else:
                raise AssertionError(f"{where}: unknown entry")
        await _until(lambda: not loop.work.tasks, f"runs still going at the end: {calls}")
        await _turns()
        assert link.sent.empty(), f"the core sent {link.sent.get_nowait()} after the script ended"
        loop.work.stopping = True
        link.close_now()  # ends the history replay if it still waits
    return calls
