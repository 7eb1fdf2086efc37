// docs/reference/limits.md from the wire's LIMITS: every figure is computed from LIMITS here, and
// every key of LIMITS is stated by some row (a new key without a row fails `npm run docs` and its test).
import { LIMITS } from "../../worker/wire/protocol.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";
import { DEFAULT, MIN_OUTPUT_BYTES } from "../../worker/config.ts";

export const LIMITS_PAGE = "docs/reference/limits.md";

type Key = keyof typeof LIMITS;
interface Row {
  keys: Key[];
  limit: string;
  value: string;
  answer: string;
  why?: string;
}

const kib = (bytes: number) => `${bytes / 1024} KiB`;
const mib = (bytes: number) => `${bytes / (1024 * 1024)} MiB`;
const range = (r: { min: number; max: number }, unit = "") => `${r.min}–${r.max}${unit}`;
const L = LIMITS;

const ROWS: Row[] = [
  { keys: ["frameBytes"], limit: "frame size", value: `${kib(L.frameBytes)} (UTF-8 bytes)`, answer: "`frame_too_large` error frame", why: "the largest legitimate frame is a reply plus JSON escaping; refused before parsing" },
  { keys: ["requestBodyBytes"], limit: "request body (any route)", value: `${kib(L.requestBodyBytes)}, read by the Worker before any object sees it; a larger declared body is never touched, a chunked one is dropped up to 1 MiB`, answer: "413 `too_large` (the next request is unaffected)" },
  { keys: ["messageTextBytes"], limit: "message text", value: kib(L.messageTextBytes), answer: "413 `too_large`; `baton send` refuses it before sending (exit 2)", why: "each message is stored and pushed to every connection of the agent" },
  { keys: ["messageTextBytes"], limit: "message request body (`POST /agents/{agent}/messages`)", value: `${kib(L.messageTextBytes * 2)}, twice the text's limit, room for JSON escapes (${L.messageTextBytes * 2} bytes)`, answer: `413 \`too_large\` ("body exceeds ${L.messageTextBytes * 2} bytes")` },
  { keys: ["idempotencyKeyChars"], limit: "`Idempotency-Key` on a post, `idempotency_key` in frames", value: `1–${L.idempotencyKeyChars} characters`, answer: "400 `bad_request` / `bad_frame`" },
  { keys: ["replyTextBytes", "blobBytes"], limit: "reply text inline", value: `${kib(L.replyTextBytes)}; larger ones as a blob, up to ${mib(L.blobBytes)}`, answer: "`too_large` error frame" },
  { keys: ["checkpointBytes", "blobBytes"], limit: "checkpoint (JSON) inline", value: `${kib(L.checkpointBytes)}; a message checkpoint larger as a blob, up to ${mib(L.blobBytes)}`, answer: "`too_large` error frame", why: "handed to every new holder in its `held:true` frame: a resume point, not a store" },
  { keys: ["jsonDepth"], limit: "JSON nesting in frames and bodies", value: `${L.jsonDepth} levels`, answer: "`bad_json` error frame / 400" },
  { keys: ["stepValueBytes", "stepsPerMessage", "journalBytes"], limit: "step or effect result inline (JSON)", value: `${kib(L.stepValueBytes)}; ${L.stepsPerMessage} steps and ${mib(L.journalBytes)} per message`, answer: "`too_large` error frame / 413" },
  { keys: ["stepNameChars"], limit: "step and effect names", value: `1–${L.stepNameChars} letters, digits, \`.\`, \`_\`, \`:\` or \`-\``, answer: "`bad_frame` / 400 `bad_request`" },
  { keys: ["effectKeyChars"], limit: "an effect's idempotency key (`baton:ACCOUNT_TAG:AGENT:ID:NAME`)", value: `at most ${L.effectKeyChars} characters`, answer: "—" },
  { keys: ["blobBytes", "blobsPerMessage", "messageBlobBytes"], limit: "step result, message checkpoint or reply as a blob (R2)", value: `${mib(L.blobBytes)}; ${L.blobsPerMessage} blobs and ${mib(L.messageBlobBytes)} per message, reserved before the upload`, answer: "413 `too_large`, 411 without Content-Length; nothing stored" },
  { keys: ["outputBatchBytes", "outputBatchChunks"], limit: "live output, one `output` frame or POST", value: `${kib(L.outputBatchBytes)} of chunk bytes (before base64) in at most ${L.outputBatchChunks} chunks`, answer: "`too_large` error frame / 413", why: "a chatty command's output is batched into few frames, paced with the other writes" },
  { keys: ["outputBytesPerMessage"], limit: "live output kept per message", value: `${mib(DEFAULT.outputBytesPerMessage)} by default (\`BATON_OUTPUT_BYTES_PER_MESSAGE\`, ${kib(MIN_OUTPUT_BYTES)} to ${mib(L.outputBytesPerMessage)})`, answer: "past it the oldest chunks go; readers get a \`dropped\` event saying how many bytes", why: "output is stored in the agent's object; it goes with its message's retention" },
  { keys: ["outputBytesPerAgent"], limit: "live output stored per agent, in all", value: `${mib(DEFAULT.outputBytesPerAgent)} by default (\`BATON_OUTPUT_BYTES_PER_AGENT\`, from the per-message budget to ${mib(L.outputBytesPerAgent)})`, answer: "past it the oldest finished messages' output goes whole (a running or parked message's never); readers get a \`dropped\` event with reason \`agent_budget\`, and the message's view says \`output_dropped\`", why: "history keeps up to `BATON_HISTORY_MESSAGES` messages, each with up to its own budget; this bounds their sum" },
  { keys: ["outputPageEvents", "outputPageBytes"], limit: "one read of live output (`GET …/output`)", value: `a page: ${L.outputPageEvents} events or ${kib(L.outputPageBytes)} of output (at least one event); a stream pulls the next page only when the reader took the last`, answer: "—" },
  { keys: ["progressBytes"], limit: "heartbeat details", value: kib(L.progressBytes), answer: "`too_large` error frame / 413" },
  { keys: ["heartbeatTimeoutSeconds"], limit: "heartbeat timeout (agent policy)", value: range(L.heartbeatTimeoutSeconds, " s"), answer: "400 `bad_request`" },
  { keys: ["debounceMs", "debounceMaxMs"], limit: "on_busy replace debounce (agent policy: `debounce_ms`, `debounce_max_ms`; `baton agent set --debounce-ms`, `--debounce-max`)", value: `a hold of at most ${L.debounceMs.max} ms; a held message runs at most \`debounce_max_ms\` after the first of its burst (up to ${L.debounceMaxMs.max} ms; default ${L.debounceMaxMs.defaultTimesDebounce} times \`debounce_ms\`)`, answer: "400 `bad_request`; a usage error in the CLI", why: "a steady trickle faster than the debounce would otherwise hold its last message for ever" },
  { keys: ["runTimeoutSeconds"], limit: "run timeout (agent policy or per message)", value: range(L.runTimeoutSeconds, " s"), answer: "400 `bad_request`" },
  { keys: ["parkDeadlineSeconds"], limit: "park and question deadline", value: range(L.parkDeadlineSeconds, " s"), answer: "`bad_frame` / 400 `bad_request`" },
  { keys: ["runnerSlots"], limit: "runner slots (`baton serve --concurrency`)", value: `1–${L.runnerSlots}`, answer: "`bad_frame`; a usage error in the CLI" },
  { keys: ["priority"], limit: "runner priority (`--priority`)", value: range(L.priority), answer: "`bad_frame`; a usage error in the CLI" },
  { keys: ["drainedMachines"], limit: "drained machines per agent", value: String(L.drainedMachines), answer: "400 `bad_request`" },
  { keys: ["groupChars"], limit: "message group key (`--group`)", value: `1–${L.groupChars} characters`, answer: "400 `bad_request`" },
  { keys: ["descriptionChars"], limit: "an agent's description (policy `description`, its A2A card)", value: `1–${L.descriptionChars} characters`, answer: "400 `bad_request`" },
  { keys: ["resumeInputBytes"], limit: "resume input", value: kib(L.resumeInputBytes), answer: "413 `too_large`" },
  { keys: ["failReasonChars"], limit: "a failed run's reason", value: `${L.failReasonChars} characters`, answer: "`bad_frame`" },
  { keys: ["questionChars", "choices", "choiceChars"], limit: "a question for a person", value: `${L.questionChars} characters; ${L.choices} choices of ${L.choiceChars}`, answer: "`bad_frame` / 400 `bad_request`" },
  { keys: ["approvers"], limit: "a question several people decide (`needs`, `reject_needs`, `approvers`)", value: `${L.approvers} approvers, and needs and reject_needs at most that`, answer: "`bad_frame` / 400 `bad_request`" },
  { keys: ["answerTextBytes"], limit: "an answer's text", value: kib(L.answerTextBytes), answer: "413 `too_large`" },
  { keys: ["approveArgsBytes"], limit: "the arguments of an effect that needs approval (`approve.args`, as canonical JSON)", value: kib(L.approveArgsBytes), answer: "`too_large` / 413 `too_large`" },
  { keys: ["leaseDataInlineBytes", "blobBytes", "leaseDataKeyChars", "leaseDataKeysPerSession", "leaseDataBytesPerSession"], limit: "a value under a session lease (`/leases/{s}/data`)", value: `${kib(L.leaseDataInlineBytes)} inline; larger ones in R2, up to ${mib(L.blobBytes)}; keys 1–${L.leaseDataKeyChars} printable ASCII characters; ${L.leaseDataKeysPerSession.toLocaleString("en")} keys and ${L.leaseDataBytesPerSession / 1024 ** 3} GiB per session`, answer: "413 `too_large`, 411 without Content-Length, 400 for a bad key; nothing stored" },
  { keys: ["leaseDataPageEntries", "leaseDataPageBytes", "leaseDataDeleteRows"], limit: "lease data pages", value: `a list page: ${L.leaseDataPageEntries} keys and ${kib(L.leaseDataPageBytes)} of inline values; a fenced delete: ${L.leaseDataDeleteRows} keys a call (then \`more\`)`, answer: "—" },
  { keys: ["connectionsPerAgent"], limit: "connections per agent", value: String(L.connectionsPerAgent), answer: "429 `too_many_connections`", why: "every election walks all sockets of the agent" },
  { keys: ["framesPerSecond", "frameCharsPerSecond"], limit: "frames per second per connection", value: `${L.framesPerSecond} frames and ${L.frameCharsPerSecond / 1024} Ki characters`, answer: "`rate_limited` error frame, frame not acted on", why: "one object serves all of an agent's connections; standbys' pings are answered by the runtime and do not count" },
  { keys: ["syncPageMessages", "syncPageBytes"], limit: "one `sync`", value: `one page: ${L.syncPageMessages} messages or ${kib(L.syncPageBytes)} of text (at least one message); \`more: true\` means ask again from \`cursor\``, answer: "—" },
  { keys: ["historyPageMessages", "historyPageBytes"], limit: "one page of history (`GET /agents/{agent}/messages`, `baton history`)", value: `${L.historyPageMessages} messages (or \`?limit=N\`, fewer) and ${kib(L.historyPageBytes)} of JSON, whichever comes first (at least one message); \`more: true\` means ask again \`?after=cursor\``, answer: "—", why: "a page is built and sent by the agent's one object: 500 messages of 32 KiB were 16.6 MB and 1.5 s that delayed its leases" },
  { keys: ["replayBytesPerSecond", "replayBytesPerSecondPerAgent"], limit: "sync replay", value: `${mib(L.replayBytesPerSecond)}/s per connection, ${mib(L.replayBytesPerSecondPerAgent)}/s per agent (token buckets)`, answer: "`rate_limited` error frame saying when to ask again; nothing is sent" },
  { keys: ["machineLabelChars"], limit: "machine labels", value: `1–${L.machineLabelChars} printable characters (no control or format characters)`, answer: "400 / `bad_frame`" },
  { keys: ["schedulesPerAgent", "schedulesPerAccount"], limit: "schedules (`baton schedule add`, one-offs of `baton send --at/--in` included)", value: `${L.schedulesPerAgent} per agent, ${L.schedulesPerAccount.toLocaleString("en")} per account`, answer: "409 `too_many_schedules`; nothing stored", why: "each one is stepped by its agent's alarm; a one-off leaves the count once its slot is decided" },
  { keys: ["scheduleIntervalSeconds"], limit: "a schedule's interval (`--every`, and the shortest gap of a cron)", value: range(L.scheduleIntervalSeconds, " s"), answer: "400 `bad_request` naming the interval" },
  { keys: ["scheduleTextBytes", "scheduleCronChars"], limit: "a schedule's text, its cron expression", value: `${kib(L.scheduleTextBytes)} (UTF-8 bytes); ${L.scheduleCronChars} characters`, answer: "400 `bad_request`; an invalid cron names its field; nothing stored" },
  { keys: ["scheduleJitterSeconds"], limit: "a schedule's jitter", value: `0–${L.scheduleJitterSeconds} s`, answer: "400 `bad_request`" },
  { keys: ["scheduleFiresKept"], limit: "fires kept per schedule (posted or skipped slots shown by `baton schedule show`)", value: String(L.scheduleFiresKept), answer: "—" },
  { keys: ["scheduleErrorBytes"], limit: "what a failed fire threw (a fire's `error`, the `schedule.skipped` webhook's)", value: `${L.scheduleErrorBytes} UTF-8 bytes`, answer: "cut on a character boundary, ending in `…`", why: "a storage error may quote a whole row; one failure must not grow a fire record or a webhook body without bound" },
  { keys: ["pushTargetsPerTask", "pushTargetsPerAgent", "pushTargetsPerAccount"], limit: "A2A push targets (`CreateTaskPushNotificationConfig`, `PUT …/messages/{id}/push/{target}`)", value: `${L.pushTargetsPerTask} per task, ${L.pushTargetsPerAgent} per agent, ${L.pushTargetsPerAccount.toLocaleString("en")} per account; a URL of at most 2048 characters, a token of 16–256`, answer: "409 `too_many_push_targets` (A2A `-32004`); nothing stored", why: "each status change of a task is one signed POST per target, sent by its agent's alarm; a task's targets end with it" },
  { keys: ["leaseTtlSeconds"], limit: "lease TTL", value: range(L.leaseTtlSeconds, " s"), answer: "400 `bad_request`" },
];

/** LIMITS keys no row states; empty when the page is complete. */
export function unstatedLimits(): string[] {
  const stated = new Set(ROWS.flatMap((r) => r.keys));
  return Object.keys(LIMITS).filter((k) => !stated.has(k as Key));
}

export function limitsPage(): string {
  const missing = unstatedLimits();
  if (missing.length) throw new Error(`scripts/docs/limits.ts: no row states LIMITS.${missing.join(", LIMITS.")}`);
  return [
    generatedHeader("scripts/docs/limits.ts", "`LIMITS` in worker/wire/protocol.ts"),
    "# Limits",
    "",
    "Every limit below is a field of `LIMITS` (`worker/wire/protocol.ts`), which the Worker, the CLI,",
    "the TypeScript client and the Python client (`baton.LIMITS`) all read. A serve connection also",
    "receives them in its `welcome` frame. A refusal is a named error ([error codes](error-codes.md))",
    "and changes nothing: no lease moves, no fence changes, nothing is stored, the connection stays open.",
    "Why each limit is there, and the few that are not in `LIMITS`: [security](../security.md#limits);",
    "the rules for agent, session and account names: [name rules](../security.md#name-rules).",
    "",
    ...markdownTable(["limit", "value", "answer", "why"], ROWS.map((r) => [r.limit, r.value, r.answer, r.why ?? ""])),
    "",
  ].join("\n");
}
