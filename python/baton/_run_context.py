"""What a handler gets beside the message (client/work-loop.ts's MessageContext): the journal's
steps, effects and asks, checkpoints, parking and heartbeats of its run. See baton/serve.py's
docstring for what is promised.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional, Sequence, Union

from . import _frame_journal
from ._handler import Message, PersonAnswer
from ._run import Run
from ._frame_journal import Effect
from ._output import OutputBatcher
from .errors import LeaseLostError

__all__ = ["Handler", "MessageContext"]


class MessageContext:
    """What a handler gets beside the message. See the module docstring for the promises."""

    def __init__(self, run: Run, checkpoint: Any, on_checkpoint: Callable[[Any], None] = lambda _: None) -> None:
        self._run = run
        self._on_checkpoint = on_checkpoint
        #: The serve lease's fence this process holds (-1 when it is not the holder).
        self.fence = run.fence
        #: The message's own lease token.
        self.token = run.token
        #: The agent's latest checkpoint, handed to the serve leaseholder (None when none).
        self.checkpoint = checkpoint
        #: Set the moment this run may no longer act (the handler task is cancelled too).
        self.lost_event = run.lost_event

    @property
    def message_checkpoint(self) -> Any:
        """This message's checkpoint from an earlier attempt (None when none; one kept in R2 is read before the handler runs)."""
        return self._run.message_checkpoint

    @property
    def cancelled(self) -> bool:
        """True once this run lost its lease (like an aborted AbortSignal)."""
        return self._run.lost is not None

    @property
    def lost(self) -> Optional[LeaseLostError]:
        """Why this run may no longer act, or None while it may."""
        return self._run.lost

    async def save_checkpoint(self, value: Any) -> None:
        """Stores the agent's checkpoint under the serve fence; raises LeaseLostError when the lease is gone."""
        await _frame_journal.agent_checkpoint(self._run, self.fence, value)
        self.checkpoint = value
        self._on_checkpoint(value)

    async def save_message_checkpoint(self, value: Any) -> None:
        """Stores this message's checkpoint under its token: the next runner of this message gets it.
        Over 16 KiB of JSON it is uploaded to the coordinator's R2 first; over 16 MiB, ValueError
        before anything is sent."""
        await _frame_journal.checkpoint(self._run, value)

    async def park(self, checkpoint: Any = None, deadline_seconds: Optional[int] = None) -> None:
        """Gives the message's lease up until someone resumes it; nothing is replied for this run.

        After ``deadline_seconds`` without a resume it fails. Return from the handler afterwards.
        ``checkpoint`` is stored as :meth:`save_message_checkpoint` stores it.
        """
        await _frame_journal.park(self._run, checkpoint, deadline_seconds)

    async def ask(self, question: str, choices: Optional[Sequence[str]] = None, deadline_seconds: Optional[int] = None,
                  on_deadline: Optional[str] = None, name: Optional[str] = None, checkpoint: Any = None, *,
                  needs: Optional[int] = None, reject_needs: Optional[int] = None,
                  approvers: Optional[Sequence[str]] = None) -> PersonAnswer:
        """Asks a person. When the journal holds the answer under this ask's step (``name``, default
        ``ask:N``, N counting this run's asks without a name), returns it at once as a
        :class:`PersonAnswer`. Otherwise parks the message with the question and raises
        WaitingForPersonError: let it propagate, the run ends as parked (nothing is replied, it is
        not a failed attempt). When someone answers, the handler runs again from the top (recorded
        steps replay) and this ``ask`` returns the answer.

        ``choices`` (1-10 short labels) are what the person picks from; without them, approve or
        reject. Reject always ends the message as ``rejected``: it never runs again. After
        ``deadline_seconds`` (1..2592000) without an answer, ``on_deadline`` decides: ``"fail"`` (the
        default), ``"approve"``, ``"reject"`` or ``"escalate"``. ``checkpoint`` is stored with the park
        as :meth:`save_message_checkpoint` stores it. Raises ValueError for a question the coordinator
        would refuse, TypeError for a bad ``name``, LeaseLostError when the message's lease is gone.

        Several people: approvals from ``needs`` distinct tokens decide approve (no ``choices`` then);
        any one reject ends it unless ``reject_needs`` says how many rejects it takes; ``approvers``
        names the only tokens that may answer. Until then the message stays parked.
        """
        quorum = {"needs": needs, "reject_needs": reject_needs, "approvers": approvers}
        return await _frame_journal.ask(self._run, question, choices, deadline_seconds, on_deadline, name, checkpoint, quorum)

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step: the first time ``name`` completes for this message, its result (JSON, at
        most 16 MiB; over 48 KiB it is uploaded to the coordinator's R2 first and read back over
        HTTP on replay) is stored under the message's token; on every later attempt, here or on another
        machine, ``step`` returns the stored result without calling ``fn`` (sync or async). Run the
        handler from the top on each attempt: recorded steps return at once, so an expensive call
        is paid once. A step whose ``fn`` raises records nothing. Returns the value the coordinator
        holds (as JSON round-trips it: tuples come back as lists). Raises LeaseLostError when the
        message's lease is gone, TypeError when ``name`` is an effect's or the result is not JSON,
        ValueError when its JSON is over 16 MiB (nothing is recorded or uploaded then).
        """
        return await _frame_journal.step(self._run, name, fn)

    async def effect(self, name: str, fn: Callable[[Effect], Any], on_unknown: str = "ask",
                     approve: Optional[dict[str, Any]] = None) -> Any:
        """A side effect: records its intent before ``fn`` runs and its outcome after, and hands
        ``fn`` (sync or async) an :class:`Effect` whose ``key`` is the same on every attempt and
        different in every account: pass it to the external API as its idempotency key. ``fn`` may
        not ``ask`` (refused with TypeError: the question could never be answered). An outcome already
        recorded is returned without running ``fn``; a second call of ``name`` while the first runs
        (``asyncio.gather``) gets the first one's outcome, and one after an outcome that was never
        recorded in this attempt is refused (``CoordinatorError``, code ``effect_in_progress``)
        without running ``fn``. If an earlier attempt recorded the intent but
        no outcome (it died, or ``fn`` raised), nobody knows whether the effect happened:
        ``on_unknown="retry"`` runs it again under the same key (for APIs that honour it); ``"ask"``
        (the default) parks the message as "outcome unknown: step NAME" until a person answers
        ``baton resume AGENT ID --done`` or ``--redo`` (here it raises OutcomeUnknownError; let it
        fail the attempt). An effect is never run twice silently.

        With ``approve={"question": ..., "args": ...}`` (optionally ``choices``, which include
        approve, ``checkpoint``, ``deadline_seconds`` and ``on_deadline``: fail, reject or escalate,
        never approve; ``needs``, ``approvers`` and ``reject_needs`` as for :meth:`ask`), ``fn`` runs only on a person's approval of exactly ``args``:
        the coordinator records the intent only when it spends an unspent permit granted for this
        message, this effect and the SHA-256 of ``args`` as canonical JSON. Without one it asks the
        question (a person sees the effect, ``args`` and the digest), the message parks (this
        raises WaitingForPersonError) and the next attempt after an approval spends the permit once.
        Other arguments, or a permit already spent, ask again; another choice than approve raises
        ApprovalDeniedError; reject ends the message.
        """
        return await _frame_journal.effect(self._run, name, fn, on_unknown, approve)

    async def heartbeat(self, details: Any = None) -> Optional[float]:
        """Tells the coordinator the run is alive: with the agent's heartbeat timeout, its deadline
        moves that far from now (never past the run timeout); ``details`` (JSON) are kept as its
        progress. Returns the run's deadline (server ms, None when it has none)."""
        return await _frame_journal.heartbeat(self._run, details)

    async def output(self, data: Union[str, bytes], stream: str = "text") -> None:
        """Streams ``data`` (text, or bytes that need not be UTF-8) to the message's live output, which
        any reader follows (``baton logs``, :func:`baton.read_output`, GET …/output) while the run
        goes on. Batched (a frame every 50 ms or 32 KiB) and paced with the run's other writes; sent
        under the message's token, so after a takeover nothing more of this attempt's output is
        stored. Everything written is sent before the run's reply, failure or park. Returns at once
        unless about 1 MiB waits to be sent, then once that went. ``stream``: ``"text"`` (default),
        ``"stdout"`` or ``"stderr"``."""
        if self._run.output is None:
            self._run.output = OutputBatcher(self._run)
        await self._run.output.write(data, stream)


Handler = Callable[[Message, MessageContext], Awaitable[Any]]

