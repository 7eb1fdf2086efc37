// docs/reference/message-lifecycle.md from LIFECYCLE (worker/rules/message-lifecycle.ts): the
// message status machine as the rules enforce it, one row per status, one column per event.
import { LIFECYCLE, LIFECYCLE_EVENTS, type LifecycleEvent, type Next } from "../../worker/rules/message-lifecycle.ts";
import { MESSAGE_STATUSES } from "../../worker/wire/enums.ts";
import { generatedHeader, markdownTable } from "./markdown.ts";

export const LIFECYCLE_PAGE = "docs/reference/message-lifecycle.md";

const EVENT_MEANING: Record<LifecycleEvent, string> = {
  ask_person: "a question for a person alone (an MCP host's ask) is posted: nobody runs it",
  hand_out: "dispatch hands the message to a runner under a fresh token",
  write: "the running attempt writes a step, heartbeat, question or checkpoint (its token checked first: `stale_token`, `not_your_message`)",
  complete: "the running attempt replies or acks",
  park: "the running attempt parks it for a person",
  decline: "a runner that said it is stopping gives back an attempt it never started: queued at once; the attempt keeps its number, not counted against max attempts",
  fail: "the running attempt fails: queued after a backoff, failed when its attempts are used up, parked when an effect's outcome is unknown",
  take_back: "its run deadline passed or its runner left: as fail, without the backoff",
  deadline: "its park deadline passed: failed (default), approve (queued, or acknowledged for a question alone), reject, escalate (parked again)",
  answer: "a person answers: approve or a choice queues it (a question alone is acknowledged), reject ends it",
  resume: "a person resumes it (`baton resume`, `--done` / `--redo` for an unknown outcome)",
  retry: "a person queues a failed message again: max attempts counts afresh, attempt numbers go on",
  cancel: "a person or a policy cancels it (final)",
  supersede: "a newer post replaces it while it waits and never ran (on_busy replace)",
};

function cell(next: Next): string {
  if (next === null) return "—";
  if ("to" in next) return next.to.map((s) => `→ ${s}`).join(", ");
  if ("refuse" in next) return `\`${next.refuse}\``;
  return "stays";
}

export function lifecyclePage(): string {
  return [
    generatedHeader("scripts/docs/lifecycle.ts", "`LIFECYCLE` in worker/rules/message-lifecycle.ts"),
    "# Message lifecycle",
    "",
    "Every status a message can have against every event that can reach it. `→ s`: it moves to `s`",
    "(where there are several, the message's data decides: its attempts, an unknown outcome, the",
    "deadline's action). A code: refused with that error code, nothing changes. stays: nothing",
    "happens. —: not a transition; a rule asked for it would be a bug, and throws instead of writing.",
    "`acknowledged`, `failed` (until a retry), `rejected`, `cancelled` and `superseded` are final.",
    "",
    ...markdownTable(["status", ...LIFECYCLE_EVENTS.map((e) => `\`${e}\``)], MESSAGE_STATUSES.map((s) => [`\`${s}\``, ...LIFECYCLE_EVENTS.map((e) => cell(LIFECYCLE[s][e]))])),
    "",
    "## Events",
    "",
    ...markdownTable(["event", "what happens"], LIFECYCLE_EVENTS.map((e) => [`\`${e}\``, EVENT_MEANING[e]])),
    "",
  ].join("\n");
}
