// The numbered migrations of MessageStore's tables (messages, message_writes, post_keys,
// checkpoint, message_answers, message_permits); migrations.ts runs the ones an object has not had yet. A new column
// or table is a new migration at the end of the list, and a column of the messages table is also
// added to its row (message-row.ts): a workerd test checks that the two agree.
import { addMissingColumns, type Migration } from "./migrations.ts";

/** Columns of the messages table added after its first 9, for tables created before them. */
const ADDED_COLUMNS: Record<string, string> = {
  token: "INTEGER NOT NULL DEFAULT 0",
  runner: "TEXT",
  expires_at: "INTEGER",
  msg_group: "TEXT",
  run_timeout_ms: "INTEGER",
  resume_input: "TEXT",
  checkpoint: "TEXT",
  checkpoint_token: "INTEGER",
  acked_token: "INTEGER",
  retry_at: "INTEGER",
  error: "TEXT",
  failures: "INTEGER NOT NULL DEFAULT 0",
  acked_runner: "TEXT",
  machine: "TEXT",
  cap_at: "INTEGER",
  pending_ask: "TEXT",
  progress: "TEXT",
  heartbeat_at: "INTEGER",
  run_key: "TEXT",
  checkpoint_blob: "TEXT",
  checkpoint_blob_bytes: "INTEGER",
  reply_blob: "TEXT",
  reply_blob_bytes: "INTEGER",
  question: "TEXT",
  on_deadline: "TEXT",
  park_ms: "INTEGER",
  resume_choice: "TEXT",
  for_person: "INTEGER NOT NULL DEFAULT 0",
  cancel: "TEXT",
  superseded_by: "INTEGER",
  run_first: "INTEGER",
  traceparent: "TEXT",
};

/**
 * 1: the tables as the releases before schema versions left them, whatever their age: a messages
 * table of 9 columns gets every column added since, and what it had handed out ("delivered", before
 * messages had tokens) is queued again, as a new holder would have been handed it anyway.
 */
const catchUpUnversioned: Migration = (sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL, created_at INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'queued', attempts INTEGER NOT NULL DEFAULT 0, delivered_fence INTEGER,
    acked_at INTEGER, acked_fence INTEGER, reply TEXT)`);
  const hadTokens = sql.exec(`SELECT 1 FROM pragma_table_info('messages') WHERE name = 'token'`).toArray().length > 0;
  addMissingColumns(sql, "messages", ADDED_COLUMNS);
  if (!hadTokens) sql.exec(`UPDATE messages SET status = 'queued' WHERE status = 'delivered'`);
  // Dispatch reads only open work (by status, oldest first), so its cost follows that, not the history.
  sql.exec(`CREATE INDEX IF NOT EXISTS messages_open ON messages (id) WHERE status != 'acknowledged'`);
  sql.exec(`CREATE INDEX IF NOT EXISTS messages_status ON messages (status, id)`);
  // The few messages that jump their group's queue (on_busy interrupt) are found without scanning the queue.
  sql.exec(`CREATE INDEX IF NOT EXISTS messages_run_first ON messages (id) WHERE run_first = 1`);
  // Keys used to be global, so one message's key could answer for another; they are per message now.
  sql.exec(`DROP TABLE IF EXISTS writes`);
  sql.exec(`CREATE TABLE IF NOT EXISTS message_writes (
    message_id INTEGER PRIMARY KEY, key TEXT NOT NULL, fence INTEGER NOT NULL, at INTEGER NOT NULL)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS post_keys (key TEXT PRIMARY KEY, message_id INTEGER NOT NULL, at INTEGER NOT NULL)`);
  sql.exec(`CREATE INDEX IF NOT EXISTS post_keys_at ON post_keys (at)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS checkpoint (one INTEGER PRIMARY KEY CHECK (one = 1), value TEXT NOT NULL, fence INTEGER NOT NULL, at INTEGER NOT NULL)`);
  sql.exec(`CREATE TABLE IF NOT EXISTS message_answers (
    message_id INTEGER NOT NULL, at INTEGER NOT NULL, choice TEXT NOT NULL, text TEXT, question TEXT,
    account TEXT NOT NULL, token TEXT NOT NULL, via TEXT NOT NULL)`);
  sql.exec(`CREATE INDEX IF NOT EXISTS message_answers_id ON message_answers (message_id, at)`);
};

/** 2: a message held by a debounce remembers when its burst began (message-row.ts held_since). */
const heldSince: Migration = (sql) => addMissingColumns(sql, "messages", { held_since: "INTEGER" });

/** 3: an on_busy policy finds what it decides on in a post's group without scanning the queue, however long it is. */
const groupStatusIndex: Migration = (sql) => {
  sql.exec(`CREATE INDEX IF NOT EXISTS messages_group_status ON messages (msg_group, status, id)`);
};

/** 4: approvals kept as one-use permits, one per message and effect (permit-store.ts, rules/permits.ts). */
const permits: Migration = (sql) => {
  sql.exec(`CREATE TABLE IF NOT EXISTS message_permits (
    message_id INTEGER NOT NULL, effect TEXT NOT NULL, digest TEXT NOT NULL, args TEXT NOT NULL, asked_token INTEGER NOT NULL,
    granted_at INTEGER NOT NULL, account TEXT NOT NULL, token_name TEXT NOT NULL, via TEXT NOT NULL, spent_token INTEGER, spent_at INTEGER,
    PRIMARY KEY (message_id, effect)) WITHOUT ROWID`);
};

/**
 * 5: a message counts the hand-outs a stopping runner gave back unstarted (message-row.ts declined):
 * they keep their attempt number and do not count against max attempts. A decline used to give its
 * number back instead, so rows stored before this have none to count.
 */
const declinedHandOuts: Migration = (sql) => addMissingColumns(sql, "messages", { declined: "INTEGER NOT NULL DEFAULT 0" });

/**
 * 6: a person's retry keeps the attempt numbers going and records the hand-outs before it
 * (message-row.ts retried_after), from which max attempts counts again. A retry used to start the
 * numbers again at 0, so rows stored before this count from 0 as they did.
 */
const retriedAfter: Migration = (sql) => addMissingColumns(sql, "messages", { retried_after: "INTEGER NOT NULL DEFAULT 0" });

export const MESSAGE_MIGRATIONS: readonly Migration[] = [catchUpUnversioned, heldSince, groupStatusIndex, permits, declinedHandOuts, retriedAfter];
