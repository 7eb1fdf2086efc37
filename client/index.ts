// baton-client: serve an agent and hold session leases from your own program. This entry has no
// Node-only imports: it runs wherever fetch and a WebSocket exist (pass `WebSocket` if there is no
// global one). Under Node, "baton-client" resolves to ./node.ts, which supplies the `ws` package.
export { serve } from "./serve.ts";
export type { ServeHandle, ServeOptions, ServeStatus } from "./serve.ts";
export type { AgentMessage, AskOptions, MessageContext, MessageHandler, PersonAnswer, ServeEvent } from "./core/handler.ts";
export { observe } from "./observe.ts";
export { send } from "./send.ts";
export type { SendOptions } from "./send.ts";
export { drain, pause, undrain, unpause } from "./controls.ts";
export { addSchedule, getSchedule, listSchedules, parseDuration, pauseSchedule, removeSchedule, resumeSchedule } from "./schedules.ts";
export type { ScheduleBody, ScheduleView } from "./schedules.ts";
export { answer, approve, reject, retry } from "./answers.ts";
export { answerFromView, answerOf, askPerson, waitForAnswer } from "./person-question.ts";
export type { PersonQuestion, PersonAnswer as PersonQuestionAnswer, WaitOptions } from "./person-question.ts";
export type { AnswerOptions } from "./answers.ts";
export { cancel } from "./cancel.ts";
export { readOutput } from "./output.ts";
export type { OutputEvent, OutputOptions } from "./output.ts";
export type { CancelOptions } from "./cancel.ts";
export type { AgentControls } from "./controls.ts";
export type { ObserveHandle, ObserveOptions, ObserveStatus } from "./observe.ts";
export { replyText, RunJournal, runProofFromEnv } from "./run-journal.ts";
export type { RunProof } from "./run-journal.ts";
export { withSessionLease } from "./session-lease.ts";
export type { SessionLease, SessionLeaseEvent, SessionLeaseOptions } from "./session-lease.ts";
export { deleteLeaseData, getLeaseData, listLeaseData, putLeaseData } from "./lease-data.ts";
export type { LeaseDataItem, LeaseWriter } from "./lease-data.ts";
export { CoordinatorError, LeaseHeldError, LeaseLostError, MessageCancelledError, UnreachableError, WaitingForPersonError } from "./errors.ts";
export type { Connection } from "./http.ts";
export type { BackoffOptions } from "./backoff.ts";
export type { WebSocketConstructor, WebSocketLike } from "./websocket.ts";
export type { ErrorCode } from "../worker/wire/protocol.ts";
