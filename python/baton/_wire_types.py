"""The wire's types, generated from worker/wire by `npm run wire-schema` (scripts/wire/python-types.ts); do not edit.

One TypedDict per client frame (``StepFrame``), server frame (``MessageServerFrame``) and result
(``StepResult``), one Literal per enum, and LIMITS (worker/wire/protocol.ts). A unit test fails when
this file and the wire drift apart."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final, Literal, Mapping, NotRequired, Required, TypedDict, Union

ClientFrameType = Literal["ping", "hello", "serve_lease", "sync", "ack", "reply", "agent_checkpoint", "message_checkpoint", "decline", "fail", "park", "step", "heartbeat", "output"]
ServerFrameType = Literal["pong", "welcome", "serve_lease", "message", "revoked", "cancel", "result", "error", "directory", "presence", "agent_gone"]
ResultOp = Literal["release", "sync", "checkpoint", "park", "decline", "fail", "step", "heartbeat", "output", "ack", "reply"]
Op = Literal["claim", "release"]
OnDeadline = Literal["fail", "approve", "reject", "escalate"]
Kind = Literal["step", "effect"]
Phase = Literal["intent", "done"]
OnUnknown = Literal["retry", "ask"]
StepFrameApproveOnDeadline = Literal["fail", "reject", "escalate"]
Stream = Literal["stdout", "stderr", "text"]
JournalKind = Literal["step", "effect", "answer"]
Status = Literal["intent", "done"]
RevokeReason = Literal["run_timeout", "runner_gone", "heartbeat_timeout"]
FailStatus = Literal["queued", "failed", "parked"]
ErrorCode = Literal["bad_json", "bad_frame", "unknown_type", "frame_too_large", "binary_frame", "not_holder", "stale_fence", "lease_expired", "unknown_message", "too_large", "rate_limited", "too_many_connections", "too_many_schedules", "too_many_push_targets", "unauthorized", "forbidden", "bad_name", "bad_request", "not_found", "lease_held", "lease_lost", "stale_token", "message_not_running", "not_your_message", "not_parked", "outcome_unknown", "effect_in_progress", "question_open", "approval_required", "cancelled", "message_finished", "busy", "no_holder", "upgrade_required", "not_configured", "internal"]
Reason = Literal["replied", "failed", "parked", "cancelled", "lease_lost", "timed_out", "declined"]
DroppedOutputEventReason = Literal["message_budget", "agent_budget"]
EndOutputEventStatus = Literal["queued", "running", "parked", "acknowledged", "failed", "rejected", "cancelled", "superseded"]


class PingFrame(TypedDict, total=False):
    type: Required[Literal["ping"]]
    fence: NotRequired[int]


class HelloFrame(TypedDict, total=False):
    type: Required[Literal["hello"]]
    machine: NotRequired[str]
    concurrency: NotRequired[int]
    stopping: NotRequired[Literal[True]]


class ServeLeaseFrame(TypedDict, total=False):
    type: Required[Literal["serve_lease"]]
    op: Required[Op]
    fence: NotRequired[int]
    concurrency: NotRequired[int]
    priority: NotRequired[int]
    runner_id: NotRequired[str]
    req: NotRequired[str]


class SyncFrame(TypedDict, total=False):
    type: Required[Literal["sync"]]
    after: Required[int]
    req: NotRequired[str]


class AckFrame(TypedDict, total=False):
    type: Required[Literal["ack"]]
    id: Required[int]
    token: Required[int]
    req: NotRequired[str]


class ReplyFrame(TypedDict, total=False):
    type: Required[Literal["reply"]]
    id: Required[int]
    token: Required[int]
    key: Required[str]
    text: Required[str]
    blob: NotRequired[str]
    req: NotRequired[str]


class AgentCheckpointFrame(TypedDict, total=False):
    type: Required[Literal["agent_checkpoint"]]
    fence: Required[int]
    value: Required[Any]
    req: NotRequired[str]


class MessageCheckpointFrame(TypedDict, total=False):
    type: Required[Literal["message_checkpoint"]]
    id: Required[int]
    token: Required[int]
    value: NotRequired[Any]
    blob: NotRequired[str]
    req: NotRequired[str]


class DeclineFrame(TypedDict, total=False):
    type: Required[Literal["decline"]]
    id: Required[int]
    token: Required[int]
    req: NotRequired[str]


class FailFrame(TypedDict, total=False):
    type: Required[Literal["fail"]]
    id: Required[int]
    token: Required[int]
    reason: Required[str]
    req: NotRequired[str]


class ParkFrameQuestion(TypedDict, total=False):
    text: Required[str]
    choices: NotRequired[list[str]]
    on_deadline: NotRequired[OnDeadline]
    step: NotRequired[str]
    needs: NotRequired[int]
    approvers: NotRequired[list[str]]
    reject_needs: NotRequired[int]


class ParkFrame(TypedDict, total=False):
    type: Required[Literal["park"]]
    id: Required[int]
    token: Required[int]
    value: NotRequired[Any]
    blob: NotRequired[str]
    deadline_seconds: NotRequired[int]
    question: NotRequired[ParkFrameQuestion]
    req: NotRequired[str]


class StepFrameApprove(TypedDict, total=False):
    question: Required[str]
    args: Required[Any]
    choices: NotRequired[list[str]]
    on_deadline: NotRequired[StepFrameApproveOnDeadline]
    needs: NotRequired[int]
    approvers: NotRequired[list[str]]
    reject_needs: NotRequired[int]


class StepFrame(TypedDict, total=False):
    type: Required[Literal["step"]]
    id: Required[int]
    token: Required[int]
    name: Required[str]
    kind: Required[Kind]
    phase: Required[Phase]
    value: NotRequired[Any]
    blob: NotRequired[str]
    on_unknown: NotRequired[OnUnknown]
    approve: NotRequired[StepFrameApprove]
    req: NotRequired[str]


class HeartbeatFrame(TypedDict, total=False):
    type: Required[Literal["heartbeat"]]
    id: Required[int]
    token: Required[int]
    details: NotRequired[Any]
    req: NotRequired[str]


class OutputFrameChunksItem(TypedDict, total=False):
    stream: Required[Stream]
    text: NotRequired[str]
    base64: NotRequired[str]


class OutputFrame(TypedDict, total=False):
    type: Required[Literal["output"]]
    id: Required[int]
    token: Required[int]
    chunks: Required[list[OutputFrameChunksItem]]
    req: NotRequired[str]


class PongServerFrame(TypedDict, total=False):
    type: Required[Literal["pong"]]


class WelcomeServerFrame(TypedDict, total=False):
    type: Required[Literal["welcome"]]
    agent: Required[str]
    heartbeat_ttl_ms: Required[float]
    limits: Required[dict[str, Any]]


class ServeLeaseServerFrameHolder(TypedDict, total=False):
    claim_seq: Required[int]
    machine: Required[str]
    since: Required[float]


class ServeLeaseServerFrame(TypedDict, total=False):
    type: Required[Literal["serve_lease"]]
    held: Required[bool]
    fence: Required[int]
    claim_seq: Required[int]
    position: Required[int]
    ttl_ms: Required[float]
    holder: Required[ServeLeaseServerFrameHolder | None]
    checkpoint: NotRequired[Any]
    checkpoint_fence: NotRequired[int]


class MessageServerFrameCheckpointBlob(TypedDict, total=False):
    id: Required[str]
    bytes: Required[int]


class MessageServerFrameStepsItemBlob(TypedDict, total=False):
    id: Required[str]
    bytes: Required[int]


class MessageServerFrameStepsItem(TypedDict, total=False):
    name: Required[str]
    kind: Required[JournalKind]
    status: Required[Status]
    value: NotRequired[Any]
    blob: NotRequired[MessageServerFrameStepsItemBlob]
    on_unknown: Required[OnUnknown | None]
    attempt: Required[int]


class MessageServerFrame(TypedDict, total=False):
    type: Required[Literal["message"]]
    id: Required[int]
    text: Required[str]
    attempt: Required[int]
    created_at: Required[float]
    run: Required[bool]
    token: NotRequired[int]
    run_timeout_ms: NotRequired[float]
    checkpoint: NotRequired[Any]
    checkpoint_blob: NotRequired[MessageServerFrameCheckpointBlob]
    resume_input: NotRequired[str | None]
    resume_choice: NotRequired[str | None]
    group: NotRequired[str | None]
    traceparent: NotRequired[str]
    steps: NotRequired[list[MessageServerFrameStepsItem]]
    heartbeat_timeout_ms: NotRequired[float]
    run_key: NotRequired[str]


class RevokedServerFrame(TypedDict, total=False):
    type: Required[Literal["revoked"]]
    id: Required[int]
    token: Required[int]
    reason: Required[RevokeReason]


class CancelServerFrame(TypedDict, total=False):
    type: Required[Literal["cancel"]]
    id: Required[int]
    token: Required[int]
    reason: Required[str | None]
    by: Required[str]


class ReleaseResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["release"]]
    req: NotRequired[str]
    released: Required[bool]
    fence: Required[int]


class SyncResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["sync"]]
    req: NotRequired[str]
    cursor: Required[int]
    more: Required[bool]


class CheckpointResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["checkpoint"]]
    req: NotRequired[str]
    fence: NotRequired[int]
    id: NotRequired[int]
    token: NotRequired[int]


class ParkResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["park"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    deadline: Required[float | None]


class DeclineResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["decline"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]


class FailResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["fail"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    status: Required[FailStatus]
    retry_at: Required[float | None]


class StepResultBlob(TypedDict, total=False):
    id: Required[str]
    bytes: Required[int]


class StepResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["step"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    name: Required[str]
    status: Required[Status]
    duplicate: Required[bool]
    value: NotRequired[Any]
    blob: NotRequired[StepResultBlob | None]
    idempotency_key: NotRequired[str]


class HeartbeatResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["heartbeat"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    expires_at: Required[float | None]


class OutputResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["output"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    offset: Required[int]


class AckResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["ack"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    fence: Required[int]
    key: Required[str]
    duplicate: Required[bool]


class ReplyResult(TypedDict, total=False):
    type: Required[Literal["result"]]
    op: Required[Literal["reply"]]
    req: NotRequired[str]
    id: Required[int]
    token: Required[int]
    fence: Required[int]
    key: Required[str]
    duplicate: Required[bool]


class ErrorServerFrame(TypedDict, total=False):
    type: Required[Literal["error"]]
    code: Required[ErrorCode]
    message: Required[str]
    req: NotRequired[str]


class ChunkOutputEvent(TypedDict, total=False):
    type: Required[Literal["chunk"]]
    seq: Required[int]
    offset: Required[int]
    attempt: Required[int]
    machine: Required[str]
    stream: Required[Stream]
    text: NotRequired[str]
    base64: NotRequired[str]
    at: Required[float]


class AttemptOutputEvent(TypedDict, total=False):
    type: Required[Literal["attempt"]]
    seq: Required[int]
    attempt: Required[int]
    machine: Required[str]
    at: Required[float]


class AttemptEndOutputEvent(TypedDict, total=False):
    type: Required[Literal["attempt_end"]]
    seq: Required[int]
    attempt: Required[int]
    reason: Required[Reason]
    at: Required[float]


class DroppedOutputEvent(TypedDict, total=False):
    type: Required[Literal["dropped"]]
    bytes: Required[int]
    offset: Required[int]
    reason: NotRequired[DroppedOutputEventReason]


class EndOutputEvent(TypedDict, total=False):
    type: Required[Literal["end"]]
    status: Required[EndOutputEventStatus]


ClientFrame = Union[PingFrame, HelloFrame, ServeLeaseFrame, SyncFrame, AckFrame, ReplyFrame, AgentCheckpointFrame, MessageCheckpointFrame, DeclineFrame, FailFrame, ParkFrame, StepFrame, HeartbeatFrame, OutputFrame]
ServerFrame = Union[PongServerFrame, WelcomeServerFrame, ServeLeaseServerFrame, MessageServerFrame, RevokedServerFrame, CancelServerFrame, ReleaseResult, SyncResult, CheckpointResult, ParkResult, DeclineResult, FailResult, StepResult, HeartbeatResult, OutputResult, AckResult, ReplyResult, ErrorServerFrame]
OutputEvent = Union[ChunkOutputEvent, AttemptOutputEvent, AttemptEndOutputEvent, DroppedOutputEvent, EndOutputEvent]

#: The wire's named enums (worker/wire/enums.ts), each value once.
MESSAGE_STATUS: Final[tuple[str, ...]] = ("queued", "running", "parked", "acknowledged", "failed", "rejected", "cancelled", "superseded",)
ON_DEADLINE: Final[tuple[str, ...]] = ("fail", "approve", "reject", "escalate",)
ON_BUSY: Final[tuple[str, ...]] = ("queue", "reject", "interrupt", "replace",)
MODE: Final[tuple[str, ...]] = ("single", "pool",)
STEP_PHASE: Final[tuple[str, ...]] = ("intent", "done",)
ON_UNKNOWN: Final[tuple[str, ...]] = ("retry", "ask",)
RESUME_OUTCOME: Final[tuple[str, ...]] = ("done", "redo",)
WEBHOOK_SCOPE: Final[tuple[str, ...]] = ("account", "agent",)
OUTPUT_STREAM: Final[tuple[str, ...]] = ("stdout", "stderr", "text",)
ATTEMPT_END_REASON: Final[tuple[str, ...]] = ("replied", "failed", "parked", "cancelled", "lease_lost", "timed_out", "declined",)
CATCH_UP: Final[tuple[str, ...]] = ("none", "one",)
SLOT_OUTCOME: Final[tuple[str, ...]] = ("posted", "skipped",)
SKIP_REASON: Final[tuple[str, ...]] = ("paused", "missed", "busy", "failed",)

#: Every path of the coordinator's route table (worker/wire/routes.ts), {name} for a parameter.
ROUTE_PATHS: Final[frozenset[str]] = frozenset({"/whoami", "/metrics", "/agents", "/observe", "/webhook", "/webhook/test", "/grants", "/grants/{grant}", "/sign-in-codes", "/mcp", "/agents/{agent}/serve", "/agents/{agent}/presence", "/agents/{agent}/messages", "/agents/{agent}/policy", "/agents/{agent}/pause", "/agents/{agent}/unpause", "/agents/{agent}/drain", "/agents/{agent}/undrain", "/agents/{agent}/webhook", "/agents/{agent}/webhook/test", "/agents/{agent}/a2a/.well-known/agent-card.json", "/agents/{agent}/a2a", "/agents/{agent}/schedules", "/agents/{agent}/schedules/{schedule}", "/agents/{agent}/schedules/{schedule}/pause", "/agents/{agent}/schedules/{schedule}/resume", "/agents/{agent}/messages/{id}", "/agents/{agent}/messages/{id}/resume", "/agents/{agent}/messages/{id}/approve", "/agents/{agent}/messages/{id}/reject", "/agents/{agent}/messages/{id}/answer", "/agents/{agent}/messages/{id}/retry", "/agents/{agent}/messages/{id}/cancel", "/agents/{agent}/messages/{id}/push", "/agents/{agent}/messages/{id}/push/{target}", "/agents/{agent}/messages/{id}/ask", "/agents/{agent}/messages/{id}/heartbeat", "/agents/{agent}/messages/{id}/output", "/agents/{agent}/messages/{id}/steps/{step}", "/agents/{agent}/messages/{id}/blobs", "/agents/{agent}/messages/{id}/blobs/{blob}", "/leases/{session}", "/leases/{session}/acquire", "/leases/{session}/renew", "/leases/{session}/release", "/leases/{session}/check", "/leases/{session}/data", "/leases/{session}/data/list", "/leases/{session}/data/delete"})

#: LIMITS of worker/wire/protocol.ts: sizes (bytes of UTF-8 JSON or text), counts, and {min, max} ranges. Read-only.
LIMITS: Final[Mapping[str, Any]] = MappingProxyType({
    "frameBytes": 65536,
    "requestBodyBytes": 81920,
    "messageTextBytes": 32768,
    "replyTextBytes": 32768,
    "checkpointBytes": 16384,
    "machineLabelChars": 64,
    "idempotencyKeyChars": 128,
    "connectionsPerAgent": 64,
    "framesPerSecond": 50,
    "frameCharsPerSecond": 1048576,
    "syncPageMessages": 100,
    "syncPageBytes": 262144,
    "historyPageMessages": 500,
    "historyPageBytes": 262144,
    "replayBytesPerSecond": 1048576,
    "replayBytesPerSecondPerAgent": 4194304,
    "leaseTtlSeconds": MappingProxyType({"min": 1, "max": 3600, "default": 30}),
    "runnerSlots": 64,
    "groupChars": 128,
    "descriptionChars": 1000,
    "resumeInputBytes": 16384,
    "failReasonChars": 4096,
    "runTimeoutSeconds": MappingProxyType({"min": 1, "max": 604800}),
    "parkDeadlineSeconds": MappingProxyType({"min": 1, "max": 2592000}),
    "priority": MappingProxyType({"min": -1000, "max": 1000}),
    "drainedMachines": 64,
    "stepValueBytes": 49152,
    "stepsPerMessage": 1000,
    "journalBytes": 2097152,
    "stepNameChars": 128,
    "effectKeyChars": 232,
    "progressBytes": 4096,
    "heartbeatTimeoutSeconds": MappingProxyType({"min": 1, "max": 86400}),
    "blobBytes": 16777216,
    "messageBlobBytes": 67108864,
    "blobsPerMessage": 64,
    "questionChars": 2000,
    "choiceChars": 64,
    "choices": 10,
    "approvers": 20,
    "answerTextBytes": 16384,
    "approveArgsBytes": 8192,
    "leaseDataKeyChars": 512,
    "leaseDataInlineBytes": 32768,
    "leaseDataPageEntries": 100,
    "leaseDataPageBytes": 262144,
    "leaseDataDeleteRows": 500,
    "leaseDataKeysPerSession": 100000,
    "leaseDataBytesPerSession": 1073741824,
    "debounceMs": MappingProxyType({"max": 600000}),
    "debounceMaxMs": MappingProxyType({"max": 3600000, "defaultTimesDebounce": 10}),
    "jsonDepth": 64,
    "outputBatchBytes": 32768,
    "outputBatchChunks": 64,
    "outputBytesPerMessage": 67108864,
    "outputBytesPerAgent": 8589934592,
    "outputPageEvents": 256,
    "outputPageBytes": 262144,
    "pushTargetsPerTask": 4,
    "pushTargetsPerAgent": 100,
    "pushTargetsPerAccount": 1000,
    "schedulesPerAgent": 50,
    "schedulesPerAccount": 5000,
    "scheduleIntervalSeconds": MappingProxyType({"min": 60, "max": 31622400}),
    "scheduleTextBytes": 8192,
    "scheduleCronChars": 128,
    "scheduleJitterSeconds": 300,
    "scheduleFiresKept": 20,
    "scheduleErrorBytes": 500,
})
