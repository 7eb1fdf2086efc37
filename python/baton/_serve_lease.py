"""The serve lease as this process sees it (client/serve-lease.ts): the coordinator's serve_lease
frames applied to a LeaseClock, read as one of four states. Pure: every call is given ``now``.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from ._clock import LeaseClock
from ._wire_types import ServeLeaseFrame, ServeLeaseServerFrame

__all__ = ["ServeLease", "ViewKind", "claim_frame"]

ViewKind = Literal["connecting", "standby", "holder", "lapsed"]


def claim_frame(runner_id: str, concurrency: int, priority: int) -> ServeLeaseFrame:
    """The claim sent on every (re)connect; concurrency 1 and priority 0 are the coordinator's defaults and are left out."""
    claim: ServeLeaseFrame = {"type": "serve_lease", "op": "claim", "runner_id": runner_id}
    if concurrency != 1:
        claim["concurrency"] = concurrency
    if priority != 0:
        claim["priority"] = priority
    return claim


class ServeLease:
    def __init__(self, ttl: float) -> None:
        self._clock = LeaseClock(ttl)
        self.kind: ViewKind = "connecting"
        self.fence = -1
        self.position = 0

    def status(self) -> dict[str, Any]:
        """The view as ``ServeHandle.status`` reports it."""
        if self.kind == "holder":
            return {"kind": "holder", "fence": self.fence}
        if self.kind == "standby":
            return {"kind": "standby", "position": self.position, "fence": self.fence}
        if self.kind == "lapsed":
            return {"kind": "lapsed", "fence": self.fence}
        return {"kind": "connecting"}

    @property
    def deadline(self) -> Optional[float]:
        """The deadline by the local monotonic clock, or None when not holding."""
        return self._clock.deadline

    def reset(self, ttl: float) -> None:
        """A new connection: nothing is held until the coordinator says so."""
        self._clock.reset(ttl)
        self.kind = "connecting"

    def set_ttl(self, ttl: float) -> None:
        self._clock.set_ttl(ttl)

    def acked(self, sent_at: float, now: float) -> None:
        """A frame sent at ``sent_at`` is known to have reached the coordinator (answered at ``now``)."""
        self._clock.confirmed(sent_at, now)
        self._sync()

    def on_lease_frame(self, frame: ServeLeaseServerFrame, now: float) -> bool:
        """Applies a serve_lease frame (a lapsed lease stays lapsed); True when it made this process the holder."""
        if self.kind == "lapsed":
            return False
        if frame["ttl_ms"] > 0:
            self._clock.set_ttl(frame["ttl_ms"] / 1000)
        was_holder = self.kind == "holder"
        self.fence = frame["fence"]
        self.position = frame.get("position", 0)
        if frame["held"]:
            self._clock.hold(now)
            self.kind = "holder"
        else:
            self._clock.drop()
            self.kind = "standby"
        self._sync()
        return self.kind == "holder" and not was_holder

    def valid(self, now: float) -> bool:
        """True while this process may still act at ``now`` or is not holding; False once lapsed."""
        ok = self._clock.valid(now)
        self._sync()
        return ok

    def may_act(self, now: float) -> bool:
        """True only while holding a lease that is still valid at ``now``."""
        ok = self._clock.may_act(now) and self.kind == "holder"
        self._sync()
        return ok

    def _sync(self) -> None:
        if self._clock.lapsed and self.kind not in ("lapsed", "connecting"):
            self.kind = "lapsed"
