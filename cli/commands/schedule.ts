// `baton schedule add AGENT TEXT (--cron EXPR [--tz ZONE] | --every DURATION)`, and `schedule
// list|show|pause|resume|rm`: an agent's schedules, kept and fired by its coordinator, each slot
// posting one message exactly once (docs/guides/schedules.md). A bad cron is refused naming its
// field, and nothing is stored.
import { addSchedule, getSchedule, listSchedules, parseDuration, pauseSchedule, removeSchedule, resumeSchedule } from "../../client/schedules.ts";
import { CATCH_UP, ON_BUSY } from "../../worker/wire/enums.ts";
import { LIMITS, utf8Bytes } from "../../worker/wire/protocol.ts";
import type { ScheduleBody, ScheduleView } from "../../worker/wire/schedules.ts";
import { defineCommand, numberOption } from "../lib/command.ts";
import { resolveConnection } from "../lib/config.ts";
import { UsageError } from "../lib/errors.ts";
import { agentName } from "../lib/names.ts";
import { printable, writeText } from "../lib/printable.ts";

const AGENT = { name: "AGENT", description: "agent name", required: true };
const ID = { name: "ID", description: "the schedule's id (`baton schedule list AGENT`)", required: true };

function scheduleId(raw: string): number {
  const id = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(id) || id < 1) throw new UsageError(`ID must be a schedule id (a whole number from 1), got ${JSON.stringify(raw)}`);
  return id;
}

const iso = (t: number | null) => (t === null ? "none" : new Date(t).toISOString());

function cadence(v: ScheduleView): string {
  if (v.cron !== null) return `cron "${v.cron}" in ${v.tz}`;
  if (v.every_seconds !== null) return `every ${v.every_seconds} s`;
  return `once at ${iso(v.at)}`;
}

function summary(v: ScheduleView): string {
  return `${v.id}  ${cadence(v)}${v.paused ? " (paused)" : ""}  next ${iso(v.next_fire)}  ${printable(v.text.slice(0, 60))}`;
}

/** What `schedule show` prints of one schedule. */
export function describe(v: ScheduleView): string[] {
  return [
    `schedule ${v.id}: ${cadence(v)}${v.paused ? ", paused" : ""}`,
    `  text        ${printable(v.text)}`,
    `  next slot   ${iso(v.next_slot)}${v.next_fire !== v.next_slot ? ` (posted at ${iso(v.next_fire)} with its jitter)` : ""}`,
    `  catch-up    ${v.catch_up}${v.jitter_seconds ? `, jitter up to ${v.jitter_seconds} s` : ""}${v.group ? `, group ${printable(v.group)}` : ""}${v.on_busy ? `, on busy ${v.on_busy}` : ""}`,
    ...(v.fires.length === 0 ? ["  no slot decided yet"] : ["  latest fires:"]),
    ...v.fires.map((f) => f.outcome === "posted"
      ? `    ${iso(f.slot)}  posted message ${f.message_id} (${Math.max(0, f.at - f.slot)} ms after its slot)`
      : `    ${iso(f.slot)}  skipped${f.count_at_least ? ` ${f.count}+ slots to ${iso(f.last_slot)}` : f.count > 1 ? ` ${f.count} slots to ${iso(f.last_slot)}` : ""}: ${f.reason}${f.error ? ` (${f.error})` : ""}`),
  ];
}

function write(json: boolean, value: unknown, lines: string[]): void {
  if (json) process.stdout.write(`${JSON.stringify(value)}\n`);
  else writeText(`${lines.join("\n")}\n`);
}

export default defineCommand({
  path: ["schedule", "add"],
  summary: "Add a schedule: the agent's coordinator posts TEXT at each slot of --cron (in --tz) or --every, exactly once per slot, " +
    "whichever machines are up. A slot up to 15 minutes late (a restart, a deploy) is still posted; older ones follow --catch-up.",
  positionals: [AGENT, { name: "TEXT", description: "the message each slot posts", required: true }],
  options: {
    cron: { type: "string", value: "EXPR", description: 'five fields: minute hour day-of-month month day-of-week ("0 9 * * 1-5"; L and W allowed)' },
    tz: { type: "string", value: "ZONE", description: "IANA time zone of --cron (default UTC), e.g. Europe/Berlin" },
    every: { type: "string", value: "DURATION", description: `a slot every DURATION of real time (90s, 15m, 2h, 1d; at least ${LIMITS.scheduleIntervalSeconds.min} s)` },
    group: { type: "string", value: "KEY", description: "the messages' group: they run one at a time, in order" },
    "run-timeout": { type: "string", value: "SECONDS", description: "each message's run timeout (default: the agent's)" },
    "on-busy": { type: "string", value: "POLICY", description: `while the previous message is open: ${ON_BUSY.join(", ")} (default: the agent's; reject skips the slot and records it)` },
    "catch-up": { type: "string", value: "WHICH", description: "slots missed while paused or down longer than 15 minutes: none, or one (the latest; default)" },
    jitter: { type: "string", value: "SECONDS", description: `post each slot up to this much later, the same for the same slot (0-${LIMITS.scheduleJitterSeconds})` },
    paused: { type: "boolean", description: "add it paused" },
  },
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const text = args[1]!;
    if (text === "") throw new UsageError("the text is empty");
    if (utf8Bytes(text) > LIMITS.scheduleTextBytes) throw new UsageError(`a schedule's text is at most ${LIMITS.scheduleTextBytes} bytes`);
    if ((options.cron === undefined) === (options.every === undefined)) throw new UsageError("give --cron or --every (one of them)");
    if (options.tz !== undefined && options.cron === undefined) throw new UsageError("--tz goes with --cron");
    const every = options.every === undefined ? undefined : parseDuration(options.every);
    if (every === null) throw new UsageError(`--every must be a duration like 90s, 15m, 2h or 1d, got ${JSON.stringify(options.every)}`);
    const onBusy = options["on-busy"];
    if (onBusy !== undefined && !(ON_BUSY as readonly string[]).includes(onBusy)) throw new UsageError(`--on-busy must be one of ${ON_BUSY.join(", ")}`);
    const catchUp = options["catch-up"];
    if (catchUp !== undefined && !(CATCH_UP as readonly string[]).includes(catchUp)) throw new UsageError(`--catch-up must be one of ${CATCH_UP.join(", ")}`);
    const { min, max } = LIMITS.runTimeoutSeconds;
    const body: ScheduleBody = {
      text,
      ...(options.cron === undefined ? {} : { cron: options.cron }),
      ...(options.tz === undefined ? {} : { tz: options.tz }),
      ...(every === undefined ? {} : { every_seconds: every }),
      ...(options.group === undefined ? {} : { group: options.group }),
      ...(options["run-timeout"] === undefined ? {} : { run_timeout_seconds: numberOption(options["run-timeout"], "run-timeout", { min, max, integer: true, unit: "seconds" }) }),
      ...(onBusy === undefined ? {} : { on_busy: onBusy as ScheduleBody["on_busy"] }),
      ...(catchUp === undefined ? {} : { catch_up: catchUp as ScheduleBody["catch_up"] }),
      ...(options.jitter === undefined ? {} : { jitter_seconds: numberOption(options.jitter, "jitter", { min: 0, max: LIMITS.scheduleJitterSeconds, integer: true, unit: "seconds" }) }),
      ...(options.paused ? { paused: true } : {}),
    };
    const view = await addSchedule(agent, body, resolveConnection(options));
    write(options.json, view, [`added schedule ${view.id} to ${agent}`, ...describe(view).slice(1)]);
  },
});

export const listCommand = defineCommand({
  path: ["schedule", "list"],
  summary: "List an agent's schedules: id, cadence, whether paused, and when each next posts.",
  positionals: [AGENT],
  options: {},
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const all = await listSchedules(agent, resolveConnection(options));
    write(options.json, { agent, schedules: all }, all.length === 0 ? [`${agent} has no schedules`] : all.map(summary));
  },
});

export const showCommand = defineCommand({
  path: ["schedule", "show"],
  summary: "Show one schedule: its cadence, its next slot, and its latest fires (each posted message's id, or why a slot was skipped).",
  positionals: [AGENT, ID],
  options: {},
  async run({ args, options }) {
    const view = await getSchedule(agentName(args[0]!), scheduleId(args[1]!), resolveConnection(options));
    write(options.json, view, describe(view));
  },
});

export const pauseCommand = defineCommand({
  path: ["schedule", "pause"],
  summary: "Pause a schedule: its slots are recorded skipped as they pass; on resume its catch-up decides about them.",
  positionals: [AGENT, ID],
  options: {},
  async run({ args, options }) {
    const view = await pauseSchedule(agentName(args[0]!), scheduleId(args[1]!), resolveConnection(options));
    write(options.json, view, [`schedule ${view.id} paused`]);
  },
});

export const resumeCommand = defineCommand({
  path: ["schedule", "resume"],
  summary: "Resume a paused schedule: with catch-up one, the latest slot it missed is posted now.",
  positionals: [AGENT, ID],
  options: {},
  async run({ args, options }) {
    const view = await resumeSchedule(agentName(args[0]!), scheduleId(args[1]!), resolveConnection(options));
    write(options.json, view, [`schedule ${view.id} resumed; next slot ${iso(view.next_slot)}`]);
  },
});

export const rmCommand = defineCommand({
  path: ["schedule", "rm"],
  summary: "Remove a schedule and its record of fires; messages it posted stay.",
  positionals: [AGENT, ID],
  options: {},
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const id = scheduleId(args[1]!);
    await removeSchedule(agent, id, resolveConnection(options));
    write(options.json, { removed: true, agent, id }, [`removed schedule ${id} of ${agent}`]);
  },
});
