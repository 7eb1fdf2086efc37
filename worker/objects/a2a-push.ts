// An agent object's A2A push targets: where each open task's status changes are pushed, kept in
// the object's SQLite beside the webhook outbox, and their pushes, which wait in that outbox and
// go out as its events do (the alarm starts them and never waits; retries, the day's give-up and
// the budget are the outbox's), each signed Standard Webhooks v1 with its target's token and
// checked again against the private-address rule before it is sent. What a change pushes and what
// fits are rules/a2a-push.ts. A task's targets end with the task: the push of its final state is
// the last, already queued with its own copy of where it goes.
import { endsTargets, pushBody, pushTargetRefusal } from "../rules/a2a-push.ts";
import { planDelivery } from "../rules/webhook-outbox-plan.ts";
import { taskState } from "../rules/a2a-task.ts";
import { webhookTargetRefusal } from "../rules/webhook-exposure.ts";
import type { MessageView } from "../wire/http-responses.ts";
import { PUSH_EVENT_TYPE, PUSH_TOKEN_HEADER, type PushTargetBody, type PushTargetView } from "../wire/push.ts";
import { migrate, type Migration } from "./migrations.ts";
import { postSigned, type Sender } from "./webhook-delivery.ts";
import type { OutboxEvent, PushDelivery, WebhookOutbox } from "./webhook-outbox.ts";
import { signedHeaders } from "./webhook-signature.ts";

type Row = { task: number; id: string; url: string; token: string; auth_scheme: string | null; auth_credentials: string | null; created_at: number };

const MIGRATIONS: readonly Migration[] = [
  (sql) => sql.exec(`CREATE TABLE IF NOT EXISTS a2a_push_targets (task INTEGER NOT NULL, id TEXT NOT NULL, url TEXT NOT NULL, token TEXT NOT NULL,
    auth_scheme TEXT, auth_credentials TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (task, id))`),
];

export type PushAnswer<T> = { ok: true; value: T } | { ok: false; status: 404 | 409; code: "not_found" | "message_finished" | "too_many_push_targets"; message: string };
/** A set's answer: `grew` is false when it replaced a target of that id (the count stayed). */
export type PushSetAnswer = { ok: true; value: PushTargetView; grew: boolean } | Extract<PushAnswer<never>, { ok: false }>;

const viewOf = (r: Row): PushTargetView => ({ task: r.task, id: r.id, url: r.url, auth_scheme: r.auth_scheme, created_at: r.created_at });

export class A2APushTargets {
  /** The tasks that have targets, as last read or written (undefined: not read yet); this class is the table's only writer. */
  private withTargets: Set<number> | undefined = undefined;
  /** Targets were set or removed since the count was last taken for the account's directory. */
  private countChanged = false;

  constructor(private readonly sql: SqlStorage, private readonly outbox: WebhookOutbox) {
    migrate(sql, "a2a_push_targets", MIGRATIONS);
  }

  /** The tasks that have targets: a plan wakes the outbox at once when one of them changes. */
  tasks(): ReadonlySet<number> {
    this.withTargets ??= new Set(this.sql.exec<{ task: number }>(`SELECT DISTINCT task FROM a2a_push_targets`).toArray().map((r) => r.task));
    return this.withTargets;
  }

  count(): number {
    return this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM a2a_push_targets`).one().n;
  }

  /** The count, when targets were set or removed since it was last taken (null: unchanged), for the account's directory. */
  takeCountChange(): number | null {
    if (!this.countChanged) return null;
    this.countChanged = false;
    return this.count();
  }

  list(task: number): PushTargetView[] {
    return this.rows(task).map(viewOf);
  }

  /**
   * Sets target `id` of task `m` (replacing one of that id); refused for a task that ended or over
   * a budget (`elsewhere`: the account's targets in its other agents). A task already past
   * submitted gets its current state at once, so a change between its post and this is not missed.
   */
  set(m: MessageView, id: string, body: PushTargetBody, elsewhere: number, now: number): PushSetAnswer {
    const state = taskState(m);
    if (endsTargets(state)) return { ok: false, status: 409, code: "message_finished", message: `task ${m.id} has ended (${m.status}): nothing more is pushed` };
    const mine = this.rows(m.id);
    const replaces = mine.some((r) => r.id === id);
    const refused = pushTargetRefusal({ task: mine.length, agent: this.count(), elsewhere, replaces });
    if (refused !== null) return { ok: false, status: 409, code: "too_many_push_targets", message: refused };
    const row: Row = { task: m.id, id, url: body.url, token: body.token, auth_scheme: body.auth_scheme ?? null, auth_credentials: body.auth_credentials ?? null, created_at: now };
    this.sql.exec(`INSERT INTO a2a_push_targets (task, id, url, token, auth_scheme, auth_credentials, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(task, id) DO UPDATE SET url = excluded.url, token = excluded.token, auth_scheme = excluded.auth_scheme,
        auth_credentials = excluded.auth_credentials, created_at = excluded.created_at`,
      row.task, row.id, row.url, row.token, row.auth_scheme, row.auth_credentials, row.created_at);
    this.withTargets = undefined;
    this.countChanged = true;
    // A replaced target's waiting pushes go where it went before; the new one hears from now on.
    if (state !== "TASK_STATE_SUBMITTED") this.queue(m, [row], now);
    return { ok: true, value: viewOf(row), grew: !replaces };
  }

  /** Removes a target and the pushes still waiting for it; false when there was none. */
  delete(task: number, id: string): boolean {
    const gone = this.sql.exec(`DELETE FROM a2a_push_targets WHERE task = ? AND id = ?`, task, id).rowsWritten > 0;
    if (gone) {
      this.withTargets = undefined;
      this.countChanged = true;
      this.outbox.dropPushes(task, id);
    }
    return gone;
  }

  /**
   * A stored change moved task `task`'s A2A state (the plan decided it, rules/plan/effects.ts
   * queue_push): one push per target is queued with `m`, the row as stored (null: gone); `ends`:
   * the final state, after which its targets are forgotten.
   */
  changed(task: number, m: MessageView | null, ends: boolean, now: number): void {
    if (m !== null) this.queue(m, this.rows(task), now);
    if (ends) {
      this.sql.exec(`DELETE FROM a2a_push_targets WHERE task = ?`, task);
      this.withTargets = undefined;
      this.countChanged = true;
    }
  }

  private queue(m: MessageView, rows: readonly Row[], now: number): void {
    const body = pushBody(m, now);
    for (const r of rows) {
      const target: PushDelivery = { task: r.task, id: r.id, url: r.url, token: r.token, authorization: r.auth_scheme === null ? null : `${r.auth_scheme} ${r.auth_credentials}` };
      this.outbox.enqueuePush(PUSH_EVENT_TYPE, body, target, now);
    }
  }

  private rows(task: number): Row[] {
    return this.sql.exec<Row>(`SELECT task, id, url, token, auth_scheme, auth_credentials, created_at FROM a2a_push_targets WHERE task = ? ORDER BY created_at, id`, task).toArray();
  }
}

/**
 * Sends claimed pushes, each to its own target, in parallel (each bounded as a webhook attempt
 * is), and records each answer in the outbox; a URL the private-address rule refuses now is a
 * failed attempt, sent nowhere. Not counted in the webhook's delivery figures.
 */
export async function deliverPushes(outbox: WebhookOutbox, due: readonly OutboxEvent[], send: Sender, now: () => number, allowPrivate: boolean): Promise<void> {
  await Promise.all(due.map(async (e) => {
    const target = e.target;
    if (target === null) return;
    // The same rule as a webhook's batch (rules/webhook-outbox-plan.ts): its receiver is known, refused or asked.
    const plan = planDelivery({ answered: true, config: target, refused: webhookTargetRefusal(target.url, allowPrivate) }, now());
    if (plan.action === "refuse") return outbox.refuse([e], plan.error, now(), false);
    if (plan.action !== "send") return;
    const t = plan.config;
    const body = e.body ?? "{}";
    const headers: Record<string, string> = { ...await signedHeaders(e.eventId, e.type, body, [t.token], now()), [PUSH_TOKEN_HEADER]: t.token };
    if (t.authorization !== null) headers.authorization = t.authorization;
    const result = await postSigned({ id: e.eventId, url: t.url, headers, body }, send);
    outbox.record(e, result, now(), false);
  }));
}
