// An agent's schedules in its object: the Worker's calls (add, list, show, pause, resume, remove)
// over the schedule store, and the fire. A fire asks rules/schedules.ts which slots are due at the
// object's clock and hands each slot to post back as a plan event (a post whose idempotency key
// names the schedule and the slot); the object runs that event through the plan and gives the
// plan's post back here to be recorded. The fire runs in synchronous transactions
// (schedule-fire.ts): a schedule's latest slot commits with its slots' posts (or their records), so
// an alarm that runs twice, or an object restarted mid-fire, never posts a slot twice nor loses one
// (and the key would find the first message if it did).
import type { AgentEvent, AgentPlan } from "../rules/agent-plan.ts";
import { checkSchedule, decideSchedule, jitterOf, nextFire, slotKey, type ScheduleDecision } from "../rules/schedules.ts";
import type { Canceller } from "../rules/plan/types.ts";
import { fireRows } from "../rules/metrics.ts";
import { capUtf8 } from "../rules/capped-text.ts";
import { LIMITS } from "../wire/protocol.ts";
import type { ScheduleBody, ScheduleView } from "../wire/schedules.ts";
import type { AgentWebhooks } from "./agent-webhooks.ts";
import type { Retention } from "./message-store.ts";
import { ScheduleStore, type StoredSchedule } from "./schedule-store.ts";
import type { WorkDesk } from "./work-desk.ts";

export type ScheduleAnswer =
  | { ok: true; view: ScheduleView }
  | { ok: false; status: 400 | 404 | 409; code: "bad_request" | "not_found" | "too_many_schedules"; message: string };

/** One slot a fire posts: the schedule, the slot, when it fell due, and the message that already posted it (null: none yet). */
export interface SlotPost {
  schedule: StoredSchedule;
  slot: number;
  fireAt: number;
  replayed: number | null;
}

export class AgentSchedules {
  readonly store: ScheduleStore;
  /** When the earliest schedule next needs the alarm, kept until the store changes (null: unknown, recomputed). */
  private wake: { at: number | null; paused: boolean } | null = null;

  constructor(sql: SqlStorage, private readonly desk: WorkDesk, private readonly webhooks: AgentWebhooks, private readonly retention: Retention) {
    this.store = new ScheduleStore(sql);
  }

  add(body: ScheduleBody, now: number, elsewhere: number): ScheduleAnswer {
    const checked = checkSchedule(body, now);
    if (!checked.ok) return { ok: false, status: 400, code: "bad_request", message: checked.message };
    if (this.store.all().length >= LIMITS.schedulesPerAgent) {
      return { ok: false, status: 409, code: "too_many_schedules", message: `an agent has at most ${LIMITS.schedulesPerAgent} schedules; remove one first` };
    }
    if (elsewhere + this.store.all().length >= LIMITS.schedulesPerAccount) {
      return { ok: false, status: 409, code: "too_many_schedules", message: `an account has at most ${LIMITS.schedulesPerAccount} schedules; remove one first` };
    }
    const s = this.store.add({
      cadence: checked.cadence, tz: checked.tz, text: body.text, group: body.group ?? null, runTimeoutMs: body.run_timeout_seconds === undefined ? null : body.run_timeout_seconds * 1000,
      onBusy: body.on_busy ?? null, catchUp: body.catch_up ?? "one", jitterMs: (body.jitter_seconds ?? 0) * 1000, paused: body.paused ?? false, createdAt: now,
    });
    this.wake = null;
    return { ok: true, view: this.view(s) };
  }

  list(): ScheduleView[] {
    return this.store.all().map((s) => this.view(s));
  }

  show(id: number): ScheduleAnswer {
    const s = this.store.get(id);
    return s ? { ok: true, view: this.view(s) } : notFound(id);
  }

  setPaused(id: number, paused: boolean): ScheduleAnswer {
    if (!this.store.get(id)) return notFound(id);
    this.store.setPaused(id, paused);
    this.wake = null;
    return this.show(id);
  }

  remove(id: number): boolean {
    this.wake = null;
    return this.store.remove(id);
  }

  count(): number {
    return this.store.all().length;
  }

  /** When the alarm must next run for the schedules (null: never). */
  nextWake(now: number, agentPaused: boolean): number | null {
    if (this.wake === null || this.wake.paused !== agentPaused) {
      let at: number | null = null;
      for (const s of this.store.all()) {
        // A slot kept for catch-up is due as soon as nothing pauses it.
        const fire = s.missed !== null && !s.paused && !agentPaused ? now : nextFire(s)?.fire ?? null;
        if (fire !== null && (at === null || fire < at)) at = fire;
      }
      this.wake = { at, paused: agentPaused };
    }
    return this.wake.at;
  }

  /**
   * The slots due at `now` (of schedule `only`, if given): skips are recorded here; each slot to
   * post comes back with its post event (or the message that already posted it). The schedule's
   * latest slot is stored now too: the caller runs the posts in the same synchronous transaction.
   */
  due(now: number, agentPaused: boolean, only?: number): SlotPost[] {
    const posts: SlotPost[] = [];
    for (const s of this.store.all()) {
      if (only !== undefined && s.id !== only) continue;
      const d = decideSchedule(s, agentPaused, now);
      if (d.post.length === 0 && d.skips.length === 0 && d.lastSlot === s.lastSlot && d.missed === s.missed) continue;
      for (const k of d.skips) {
        this.store.recordFire(s.id, { slot: k.slot, outcome: "skipped", at: now, messageId: null, reason: k.reason, count: k.count, countAtLeast: k.countAtLeast, lastSlot: k.last });
        const atLeast = k.countAtLeast ? { count_at_least: true as const } : {};
        this.webhooks.enqueue({ type: "schedule.skipped", schedule: { id: s.id, slot: k.slot, last_slot: k.last, count: k.count, ...atLeast }, reason: k.reason }, now);
        this.store.tally([{ key: `skipped:${k.reason}`, value: k.count }]);
      }
      for (const slot of d.post) posts.push(this.slotPost(s, slot, now));
      this.settle(s, d);
    }
    this.wake = null;
    return posts;
  }

  /** A slot's post as the plan decided it (or the message that had posted it): recorded, with its webhook event. */
  posted(p: SlotPost, post: AgentPlan["post"] | null, now: number): void {
    const messageId = p.replayed ?? (post?.ok ? post.insert.id : null);
    if (messageId !== null) {
      const late = Math.max(0, now - p.fireAt);
      this.store.recordFire(p.schedule.id, { slot: p.slot, outcome: "posted", at: now, messageId, reason: null, count: 1, lastSlot: p.slot });
      if (p.replayed === null) {
        this.webhooks.enqueue({ type: "schedule.fired", schedule: { id: p.schedule.id, slot: p.slot, late_ms: late }, message_id: messageId }, now);
        this.store.tally(fireRows(late));
      }
      return;
    }
    // on_busy reject refused it: nothing was stored but the skip.
    this.store.recordFire(p.schedule.id, { slot: p.slot, outcome: "skipped", at: now, messageId: null, reason: "busy", count: 1, lastSlot: p.slot });
    this.webhooks.enqueue({ type: "schedule.skipped", schedule: { id: p.schedule.id, slot: p.slot, last_slot: p.slot, count: 1 }, reason: "busy" }, now);
    this.store.tally([{ key: "skipped:busy", value: 1 }]);
  }

  /** A slot whose fire threw and was rolled back: recorded skipped (reason `failed`, with the error, capped), never posted, with its webhook event. */
  failed(p: SlotPost, thrown: string, now: number): void {
    const error = capUtf8(thrown, LIMITS.scheduleErrorBytes);
    this.store.recordFire(p.schedule.id, { slot: p.slot, outcome: "skipped", at: now, messageId: null, reason: "failed", error, count: 1, lastSlot: p.slot });
    this.webhooks.enqueue({ type: "schedule.skipped", schedule: { id: p.schedule.id, slot: p.slot, last_slot: p.slot, count: 1 }, reason: "failed", error }, now);
    this.store.tally([{ key: "skipped:failed", value: 1 }]);
  }

  private slotPost(s: StoredSchedule, slot: number, now: number): SlotPost {
    const earlier = this.store.postedFire(s.id, slot) ?? this.desk.messages.postKeys.postedWith(slotKey(s.id, slot), now, this.retention.postKeyMs);
    return { schedule: s, slot, fireAt: slot + jitterOf(s.id, slot, s.jitterMs), replayed: earlier };
  }

  /** The plan event that posts a slot's message, read just before it runs (the next message id, the group's open messages). */
  postEvent({ schedule: s, slot }: SlotPost, account: string): Extract<AgentEvent, { type: "post" }> {
    const by: Canceller = { account, token: `schedule ${s.id}`, via: "schedule" };
    return {
      type: "post",
      post: {
        text: s.text, group: s.group, runTimeoutMs: s.runTimeoutMs, key: slotKey(s.id, slot), question: null, deadlineSeconds: null, traceparent: null,
        ...(s.onBusy ? { onBusy: s.onBusy } : {}),
      },
      lastId: this.desk.messages.lastIssuedId(), groupOpen: this.desk.busyGroupOf(s.group, s.onBusy), by,
    };
  }

  /** The schedule's latest slot as the decision left it; a one-off whose slot was decided is done and goes. */
  private settle(s: StoredSchedule, d: ScheduleDecision): void {
    if (s.cadence.kind === "at" && d.next === null && d.missed === null) this.store.remove(s.id);
    else this.store.advance(s.id, d.lastSlot, d.missed);
  }

  private view(s: StoredSchedule): ScheduleView {
    const next = nextFire(s);
    const c = s.cadence;
    return {
      id: s.id, cron: c.kind === "cron" ? c.cron : null, tz: s.tz, every_seconds: c.kind === "every" ? c.everyMs / 1000 : null, at: c.kind === "at" ? c.at : null,
      text: s.text, group: s.group, run_timeout_seconds: s.runTimeoutMs === null ? null : s.runTimeoutMs / 1000, on_busy: s.onBusy, catch_up: s.catchUp,
      jitter_seconds: s.jitterMs / 1000, paused: s.paused, created_at: s.createdAt, next_slot: next?.slot ?? null, next_fire: next?.fire ?? null,
      last_slot: s.lastSlot, fires: this.store.fires(s.id),
    };
  }
}

function notFound(id: number): ScheduleAnswer {
  return { ok: false, status: 404, code: "not_found", message: `no schedule ${id}` };
}
