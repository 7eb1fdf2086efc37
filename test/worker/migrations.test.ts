// The stored message row and the numbered migrations: a table as the oldest release left it (9
// columns, "delivered" work, no schema version) comes up to the row's schema and keeps every row;
// migrations run once per object and are recorded only once done; a stored value of the wrong kind
// is refused with the column it is in. The upgrade from the previous release, for real, is
// test/e2e/upgrade.test.ts.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { leaseOf, messageRow } from "../../worker/objects/message-row.ts";
import { newLease, type PostInsert } from "../../worker/rules/plan/post.ts";
import { triesOf } from "../../worker/rules/message-lease.ts";
import { StepStore, stepRow } from "../../worker/objects/step-store.ts";
import { permitRow } from "../../worker/objects/permit-store.ts";
import { migrate, schemaVersion } from "../../worker/objects/migrations.ts";
import { WebhookConfigStore } from "../../worker/objects/webhook-config.ts";
import { DirectoryReporter } from "../../worker/objects/directory-reporter.ts";
import { AgentMetricsKeeper } from "../../worker/objects/metrics-agent.ts";
import type { RowCodec } from "../../worker/objects/sql-row.ts";
import { call, stubFor, uniqueAgent } from "./helpers.ts";

type Info = { name: string; type: string; notnull: number };

/** A post's row as its plan would give it: the next id after the last one SQLite handed out. */
function newRow(store: MessageStore, text: string): PostInsert {
  return { id: store.lastIssuedId() + 1, text, createdAt: 1, group: null, runTimeoutMs: null, holdUntil: null, heldSince: null, first: false, forPerson: false, traceparent: null, key: null };
}

/** The table's columns as SQLite has them, beside the row schema's: equal when the migrations and the row agree. */
function shapes<Row extends Record<string, SqlStorageValue>>(sql: SqlStorage, codec: RowCodec<Row>) {
  const table = sql.exec<Info>(`SELECT name, type, "notnull" FROM pragma_table_info('${codec.table}')`).toArray()
    .map((c) => ({ name: c.name, type: c.type, nullable: c.notnull === 0 && c.name !== "id" }));
  const schema = codec.describe();
  const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
  return { table: table.sort(byName), schema: schema.sort(byName) };
}

/** Leaves `sql` as a release before schema versions left it: no version, and the given tables gone. */
function unversioned(sql: SqlStorage, ...tables: string[]): void {
  for (const t of tables) sql.exec(`DROP TABLE IF EXISTS ${t}`);
  sql.exec(`DELETE FROM schema_versions`);
}

describe("the message row", () => {
  it("a fresh object's messages, message_steps and message_permits tables have exactly the row schemas' columns, at versions 6 and 2", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      for (const { table, schema } of [shapes(sql, messageRow), shapes(sql, stepRow), shapes(sql, permitRow)]) expect(table).toEqual(schema);
      expect([schemaVersion(sql, "messages"), schemaVersion(sql, "message_steps")]).toEqual([6, 2]);
    });
  });

  it("every store of a fresh agent object makes its tables by a numbered migration and records its version", async () => {
    const agent = uniqueAgent();
    await call("POST", `/agents/${agent}/messages`, { text: "one" });
    await runInDurableObject(stubFor(agent), (_i, state) => {
      const { sql } = state.storage;
      const versions = Object.fromEntries(sql.exec<{ store: string; version: number }>(`SELECT store, version FROM schema_versions`).toArray().map((r) => [r.store, r.version]));
      for (const store of ["messages", "message_steps", "transitions", "drained_machines", "message_blobs", "message_tally", "webhook_outbox", "webhook_config", "output", "kv:meta", "kv:controls"]) {
        expect(versions[store], store).toBeGreaterThanOrEqual(1);
      }
    });
  });

  it("a messages table of the first 9 columns, with no version, comes up to the row's schema and keeps every message; delivered work is queued again", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      unversioned(sql, "messages", "message_writes");
      sql.exec(`CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, created_at INTEGER NOT NULL,
        status TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0, delivered_fence INTEGER,
        acked_at INTEGER, acked_fence INTEGER, reply TEXT)`);
      sql.exec(`INSERT INTO messages (text, created_at, status, attempts, delivered_fence, acked_at, acked_fence, reply) VALUES
        ('waiting', 1, 'queued', 0, NULL, NULL, NULL, NULL), ('handed out', 2, 'delivered', 1, 3, NULL, NULL, NULL), ('done', 3, 'acknowledged', 1, 3, 4, 3, 'ok')`);
      const store = new MessageStore(sql);
      const { table, schema } = shapes(sql, messageRow);
      expect(table).toEqual(schema);
      expect(store.pages.range(0, 3).map((m) => [m.text, m.status, m.token, m.failures, m.for_person, m.reply])).toEqual([
        ["waiting", "queued", 0, 0, 0, null], ["handed out", "queued", 0, 0, 0, null], ["done", "acknowledged", 0, 0, 0, "ok"],
      ]);
      expect(store.openLeases(10).map((l) => l.id)).toEqual([1, 2]);
      expect(schemaVersion(sql, "messages")).toBe(6);
      expect(sql.exec(`SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'messages_group_status'`).toArray()).toHaveLength(1);
    });
  });

  it("a messages table at version 1 (before held_since) gains the column (then the group index, the permits table, the declined count and retried_after) at version 6 and keeps its messages", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      new MessageStore(sql);
      sql.exec(`ALTER TABLE messages DROP COLUMN held_since`);
      sql.exec(`UPDATE schema_versions SET version = 1 WHERE store = 'messages'`);
      sql.exec(`INSERT INTO messages (text, created_at, retry_at) VALUES ('held', 5, 300)`);
      sql.exec(`DROP TABLE message_permits`);
      const store = new MessageStore(sql);
      expect(schemaVersion(sql, "messages")).toBe(6);
      expect(shapes(sql, permitRow).table).toEqual(shapes(sql, permitRow).schema);
      const { table, schema } = shapes(sql, messageRow);
      expect(table).toEqual(schema);
      expect(store.pages.range(0, store.pages.lastId()).map((m) => [m.text, m.retry_at, m.held_since])).toEqual([["held", 300, null]]);
    });
  });

  it("a messages table at version 4 (before declined) gains the count (then retried_after) at version 6, none declined, and keeps its messages and their attempts", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      new MessageStore(sql);
      // As the release before left it: the tally's trigger of then (message_tally version 1) reads no declined count.
      sql.exec(`DROP TRIGGER tally_attempts`);
      sql.exec(`ALTER TABLE messages DROP COLUMN declined`);
      sql.exec(`ALTER TABLE messages DROP COLUMN retried_after`);
      sql.exec(`UPDATE schema_versions SET version = 4 WHERE store = 'messages'`);
      sql.exec(`UPDATE schema_versions SET version = 1 WHERE store = 'message_tally'`);
      sql.exec(`INSERT INTO messages (text, created_at, status, attempts, token) VALUES ('ran twice', 5, 'queued', 2, 7)`);
      const store = new MessageStore(sql);
      new AgentMetricsKeeper(sql);
      expect([schemaVersion(sql, "messages"), schemaVersion(sql, "message_tally")]).toEqual([6, 2]);
      const { table, schema } = shapes(sql, messageRow);
      expect(table).toEqual(schema);
      const [m] = store.pages.range(0, store.pages.lastId());
      expect([m!.text, m!.attempts, m!.declined]).toEqual(["ran twice", 2, 0]);
      expect(leaseOf(m!)).not.toHaveProperty("declined");
      // The tally's new trigger: a hand-out after a declined first one is a delivery and no redelivery; one after a counted try is both.
      const tally = () => Object.fromEntries(sql.exec<{ key: string; value: number }>(`SELECT key, value FROM message_tally WHERE key IN ('deliveries', 'redeliveries')`).toArray().map((r) => [r.key, r.value]));
      const fresh = sql.exec<{ id: number }>(`INSERT INTO messages (text, created_at) VALUES ('declined first', 6) RETURNING id`).one().id;
      const before = tally();
      const handOut = (attempts: number) => sql.exec(`UPDATE messages SET attempts = ? WHERE id = ?`, attempts, fresh);
      handOut(1);
      sql.exec(`UPDATE messages SET declined = 1 WHERE id = ?`, fresh);
      handOut(2);
      expect(tally()).toEqual({ deliveries: before.deliveries! + 2, redeliveries: before.redeliveries! });
      handOut(3);
      expect(tally()).toEqual({ deliveries: before.deliveries! + 3, redeliveries: before.redeliveries! + 1 });
    });
  });

  it("a messages table at version 5 (before retried_after) gains it at version 6, never retried, and keeps its messages' attempts and declined counts", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      new MessageStore(sql);
      sql.exec(`ALTER TABLE messages DROP COLUMN retried_after`);
      sql.exec(`UPDATE schema_versions SET version = 5 WHERE store = 'messages'`);
      // A message a person retried under the release before: its attempts started again at 0, and it ran once since.
      sql.exec(`INSERT INTO messages (text, created_at, status, attempts, declined, token, msg_group) VALUES ('retried then', 5, 'queued', 2, 1, 9, 'g')`);
      const store = new MessageStore(sql);
      new AgentMetricsKeeper(sql);
      expect(schemaVersion(sql, "messages")).toBe(6);
      const { table, schema } = shapes(sql, messageRow);
      expect(table).toEqual(schema);
      const [m] = store.pages.range(0, store.pages.lastId());
      expect([m!.text, m!.attempts, m!.declined, m!.retried_after]).toEqual(["retried then", 2, 1, 0]);
      expect(leaseOf(m!)).not.toHaveProperty("retriedAfter");
      expect(triesOf(leaseOf(m!))).toBe(1);
      // A retry from now on records the attempts before it; on_busy replace's read finds it never started since, until its next hand-out.
      const neverStarted = () => store.busyGroup("g", { statuses: ["queued"], neverStarted: true, oldestOnly: false }).map((l) => l.id);
      expect(neverStarted()).toEqual([]);
      const tally = () => sql.exec<{ value: number }>(`SELECT value FROM message_tally WHERE key = 'redeliveries'`).one().value;
      store.saveLease({ ...leaseOf(m!), status: "queued", attempts: 3, declined: 0, retriedAfter: 3 });
      expect(store.pages.range(0, store.pages.lastId()).map((r) => [r.attempts, r.declined, r.retried_after])).toEqual([[3, 0, 3]]);
      expect(neverStarted()).toEqual([m!.id]);
      // The hand-out after the retry is attempt 4, a redelivery of a message that ran; queued again after it, it has started.
      const before = tally();
      store.saveLease({ ...leaseOf(store.pages.range(0, store.pages.lastId())[0]!), status: "queued", attempts: 4 });
      expect(tally()).toBe(before + 1);
      expect(neverStarted()).toEqual([]);
    });
  });

  it("a step journal without its blob and effect key columns comes up to the row's schema and keeps its records", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      unversioned(sql, "message_steps");
      sql.exec(`CREATE TABLE message_steps (message_id INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, status TEXT NOT NULL, value TEXT,
        on_unknown TEXT, attempt INTEGER NOT NULL, token INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (message_id, name)) WITHOUT ROWID`);
      sql.exec(`INSERT INTO message_steps VALUES (7, 'pay', 'effect', 'intent', NULL, 'ask', 1, 4, 10)`);
      const steps = new StepStore(sql);
      const { table, schema } = shapes(sql, stepRow);
      expect(table).toEqual(schema);
      expect(steps.get(7, "pay")).toEqual({ name: "pay", kind: "effect", status: "intent", value: null, blob: null, onUnknown: "ask", attempt: 1, token: 4, at: 10 });
    });
  });

  it("a stored value of the wrong kind is refused, naming its table and column", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const store = new MessageStore(state.storage.sql);
      const m = store.insert(newRow(store, "odd"));
      state.storage.sql.exec(`UPDATE messages SET status = 'lost' WHERE id = ?`, m.id);
      expect(() => store.get(m.id)).toThrow(`messages.status holds "lost", not one of queued, running, parked`);
      expect(() => store.patch(m.id, { attempts: "two" as never })).toThrow("messages.attempts cannot hold \"two\", only an integer");
    });
  });

  it("patch writes only the fields it is given", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const store = new MessageStore(state.storage.sql);
      const m = store.insert({ ...newRow(store, "patched"), group: "g" });
      store.patch(m.id, { error: "boom", retry_at: 5 });
      expect(store.get(m.id)).toEqual({ ...m, error: "boom", retry_at: 5 });
    });
  });
});

describe("a post's row", () => {
  it("reads back as the lease its plan dispatched, and its id is never one a pruned message had", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const store = new MessageStore(state.storage.sql);
      const rows: PostInsert[] = [
        newRow(store, "plain"),
        { ...newRow(store, "held"), id: 2, group: "g", runTimeoutMs: 5000, holdUntil: 9, first: true, traceparent: "00-x" },
        { ...newRow(store, "ask"), id: 3, forPerson: true },
      ];
      for (const row of rows) expect(leaseOf(store.insert(row))).toEqual(newLease(row));
      state.storage.sql.exec(`DELETE FROM messages WHERE id = 3`);
      expect(store.lastIssuedId()).toBe(3);
    });
  });
});

describe("numbered migrations", () => {
  it("run once, in order, past the stored version; one that throws is not recorded and runs again", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      const ran: string[] = [];
      let fail = true;
      const migrations = [() => ran.push("1"), () => {
        ran.push("2");
        if (fail) throw new Error("cut short");
      }];
      expect(() => migrate(sql, "trial", migrations)).toThrow("cut short");
      expect(schemaVersion(sql, "trial")).toBe(1);
      fail = false;
      expect(migrate(sql, "trial", migrations)).toBe(1);
      expect(migrate(sql, "trial", migrations)).toBe(2);
      expect(ran).toEqual(["1", "2", "2"]);
      expect(migrate(sql, "trial", [...migrations, () => ran.push("3")])).toBe(2);
      expect(ran).toEqual(["1", "2", "2", "3"]);
    });
  });

  it("the directory report and webhook tables of a release before versions come up to date", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      unversioned(sql, "directory_report", "webhook_config");
      sql.exec(`CREATE TABLE directory_report (id INTEGER PRIMARY KEY CHECK (id = 1), fingerprint TEXT NOT NULL)`);
      sql.exec(`INSERT INTO directory_report VALUES (1, 'f')`);
      sql.exec(`CREATE TABLE webhook_config (one INTEGER PRIMARY KEY CHECK (one = 1), url TEXT NOT NULL, secret TEXT NOT NULL,
        no_holder_after_ms INTEGER NOT NULL, origin TEXT NOT NULL, updated_at INTEGER NOT NULL)`);
      sql.exec(`INSERT INTO webhook_config VALUES (1, 'https://example.com/h', 's', 60000, 'https://baton.example', 5)`);
      new DirectoryReporter(sql, 60_000, { now: () => Date.now(), fromRuntime: (ms) => ms, alarmAt: (ms) => ms }, () => {});
      expect(sql.exec(`SELECT * FROM directory_report`).one()).toEqual({ id: 1, fingerprint: "f", confirmed_at: null, connected: 0 });
      expect(new WebhookConfigStore(sql).get()).toMatchObject({ url: "https://example.com/h", secret: "s", oldSecret: null, oldSecretExpiresAt: null });
      expect([schemaVersion(sql, "directory_report"), schemaVersion(sql, "webhook_config")]).toEqual([1, 1]);
    });
  });
});
