"""An agent's schedules, for scripts (as client/schedules.ts): the agent's coordinator posts the
schedule's text at each slot, exactly once per slot (docs/guides/schedules.md). Give exactly one
of ``cron`` (five fields, in ``tz``, default UTC), ``every_seconds``, or a one-off: ``at`` (ISO
8601) or ``in_seconds`` (from now, by the coordinator's clock).

Each call blocks (urllib); from async code, ``await asyncio.to_thread(baton.add_schedule, ...)``.
A refused schedule raises CoordinatorError ``bad_request`` (a bad cron names its field; nothing is
stored) or ``too_many_schedules`` (409); changing one needs the ``admin`` scope, listing ``read``.
"""

from __future__ import annotations

from typing import Any, Optional

from ._http import request_json
from ._routes import route_path

__all__ = ["add_schedule", "list_schedules", "get_schedule", "pause_schedule", "resume_schedule", "remove_schedule"]


def _id(id: int) -> int:
    if isinstance(id, bool) or not isinstance(id, int) or id < 1:
        raise ValueError(f"a schedule id is a positive integer, not {id!r}")
    return id


def add_schedule(agent: str, text: str, *, url: str, token: str, cron: Optional[str] = None, tz: Optional[str] = None,
                 every_seconds: Optional[int] = None, at: Optional[str] = None, in_seconds: Optional[int] = None,
                 group: Optional[str] = None, run_timeout_seconds: Optional[int] = None, on_busy: Optional[str] = None,
                 catch_up: Optional[str] = None, jitter_seconds: Optional[int] = None, paused: bool = False,
                 timeout: float = 30.0) -> dict[str, Any]:
    """Adds a schedule to ``agent`` and returns its view (``id``, ``next_slot``, ``next_fire``, ...)."""
    options = {"cron": cron, "tz": tz, "every_seconds": every_seconds, "at": at, "in_seconds": in_seconds, "group": group,
               "run_timeout_seconds": run_timeout_seconds, "on_busy": on_busy, "catch_up": catch_up, "jitter_seconds": jitter_seconds}
    body: dict[str, Any] = {"text": text, **{k: v for k, v in options.items() if v is not None}}
    if paused:
        body["paused"] = True
    _status, view = request_json(url, token, "POST", route_path("/agents/{agent}/schedules", agent=agent), body, timeout)
    return view


def list_schedules(agent: str, *, url: str, token: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The agent's schedules, each with its next slot and its latest fires."""
    _status, page = request_json(url, token, "GET", route_path("/agents/{agent}/schedules", agent=agent), None, timeout)
    return list(page["schedules"])


def get_schedule(agent: str, id: int, *, url: str, token: str, timeout: float = 30.0) -> dict[str, Any]:
    """One schedule; its ``fires`` name the message each posted slot made, or why a slot was skipped."""
    path = route_path("/agents/{agent}/schedules/{schedule}", agent=agent, schedule=_id(id))
    _status, view = request_json(url, token, "GET", path, None, timeout)
    return view


def pause_schedule(agent: str, id: int, *, url: str, token: str, timeout: float = 30.0) -> dict[str, Any]:
    """Its slots are recorded skipped as they pass; on resume its catch-up decides about them."""
    path = route_path("/agents/{agent}/schedules/{schedule}/pause", agent=agent, schedule=_id(id))
    _status, view = request_json(url, token, "POST", path, None, timeout)
    return view


def resume_schedule(agent: str, id: int, *, url: str, token: str, timeout: float = 30.0) -> dict[str, Any]:
    path = route_path("/agents/{agent}/schedules/{schedule}/resume", agent=agent, schedule=_id(id))
    _status, view = request_json(url, token, "POST", path, None, timeout)
    return view


def remove_schedule(agent: str, id: int, *, url: str, token: str, timeout: float = 30.0) -> None:
    """Removes the schedule and its record of fires; the messages it posted stay."""
    path = route_path("/agents/{agent}/schedules/{schedule}", agent=agent, schedule=_id(id))
    request_json(url, token, "DELETE", path, None, timeout)
