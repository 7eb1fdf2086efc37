// The step journal's rules, once for every shell: a step runs once per message, an effect records
// its intent before it runs and its outcome after, and an intent without an outcome is an unknown
// outcome that the effect's policy decides. The library (frames on the serve socket) and the CLI's
// `baton step`, `baton effect` and `baton ask` (HTTP with the run key) both reach the journal
// through a StepJournal and decide here.
import { LIMITS, STEP_NAME, unknownOutcomeReason, type EffectApproval, type OnUnknown } from "../../worker/wire/protocol.ts";
import type { JournalEntry } from "../../worker/wire/server-frames.ts";
import { approvalAnswerStep } from "../../worker/wire/approvals.ts";
import { CoordinatorError } from "../errors.ts";

export type JournalKind = JournalEntry["kind"];

/** What the journal holds under one name, its value read back (inline, or from R2). */
export interface Recorded {
  kind: JournalKind;
  status: "intent" | "done";
  value: unknown;
}

/** What the journal holds after a write, and for an effect's intent the key the coordinator made for it. */
export interface Written {
  status: "intent" | "done";
  value: unknown;
  key?: string;
}

export interface JournalWrite {
  kind: "step" | "effect";
  phase: "intent" | "done";
  value?: unknown;
  onUnknown?: OnUnknown;
  /** An effect's intent that needs a person's approval of these arguments (rules/permits.ts on the coordinator). */
  approve?: EffectApproval;
}

/** One run's journal, wherever it is kept: the frames of the serve socket, or HTTP under the run key. */
export interface StepJournal {
  /** The record under `name` (null: none yet). */
  get(name: string): Promise<Recorded | null>;
  /** Writes one record under the run's lease; resolves with what the journal holds for `name` now. */
  record(name: string, write: JournalWrite): Promise<Written>;
  /** Throws when the run may no longer write (aborted); called before anything runs or is recorded. */
  check?(): void;
}

/** An earlier attempt began this effect and recorded no outcome, and its policy is ask: a person decides. */
export class OutcomeUnknownError extends Error {
  override readonly name = "OutcomeUnknownError";
  constructor(readonly step: string, readonly agent: string, readonly id: number) {
    super(`${unknownOutcomeReason(step)}; a person decides: baton resume ${agent} ${id} --done | --redo`);
  }
}

/**
 * The effect needs a person's approval of exactly these arguments, and the coordinator holds no
 * unspent permit for them: it stored the question for this attempt, which now parks on it. When
 * a person approves, the next attempt spends the permit (once) and the effect runs.
 */
export class ApprovalRequiredError extends Error {
  override readonly name = "ApprovalRequiredError";
  constructor(readonly step: string, readonly question: string, reason: string) {
    super(reason);
  }
}

/** A person answered the effect's approval question with a choice other than approve (reject ends the message instead). */
export class ApprovalDeniedError extends Error {
  override readonly name = "ApprovalDeniedError";
  constructor(readonly step: string, readonly choice: string, readonly answer: unknown) {
    super(`effect "${step}" was not approved: a person chose ${JSON.stringify(choice)}`);
  }
}

/** The coordinator handed out no idempotency key: it predates effects. */
export class NoIdempotencyKeyError extends Error {
  override readonly name = "NoIdempotencyKeyError";
  constructor(readonly step: string) {
    super(`effect "${step}": this coordinator hands out no idempotency key; it is too old for this client`);
  }
}

export function checkStepName(name: string): void {
  if (!STEP_NAME.test(name)) throw new TypeError(`step names are 1-${LIMITS.stepNameChars} letters, digits, '.', '_', ':' or '-', got ${JSON.stringify(name)}`);
}

export function kindName(kind: JournalKind): string {
  return kind === "answer" ? "a person's answer" : kind === "step" ? "a step" : "an effect";
}

/** A name already recorded as another kind (a step's name used for an effect, a run's step for an ask). */
export class NameClashError extends TypeError {
  override readonly name = "NameClashError";
}

/** A record under `name` of another kind than `kind` is a name clash, refused before anything runs. */
export function checkKind(known: Recorded | null, name: string, kind: JournalKind): void {
  if (!known || known.kind === kind) return;
  const recorded = `"${name}" is recorded as ${kindName(known.kind)}`;
  if (kind === "answer") throw new NameClashError(`${recorded}, not as a person's answer; an ask needs a name of its own`);
  throw new NameClashError(`${recorded}; ${kindName(kind)} needs a name of its own`);
}

/** A step: the recorded result when there is one, else `fn`'s result, recorded. `fn` throwing records nothing. */
export async function runStep<T>(journal: StepJournal, name: string, fn: () => Promise<T> | T): Promise<T> {
  const known = await journal.get(name);
  checkKind(known, name, "step");
  // A run that lost its message replays nothing either: what it would return is not its own.
  journal.check?.();
  if (known?.status === "done") return known.value as T;
  const value = await fn();
  return (await journal.record(name, { kind: "step", phase: "done", value })).value as T;
}

/**
 * An effect: a recorded outcome is returned without running `fn`; otherwise the intent is recorded
 * first (durable before the effect runs, so a successor knows it may have happened), then `fn` runs
 * with the coordinator's idempotency key and its outcome is recorded. An intent found without an
 * outcome under policy ask throws OutcomeUnknownError; under retry `fn` runs again with the same key.
 */
export async function runEffect<T>(
  journal: StepJournal, name: string, onUnknown: OnUnknown, fn: (key: string) => Promise<T> | T,
  identity: { agent: string; id: number }, approve?: EffectApproval,
): Promise<T> {
  const known = await journal.get(name);
  checkKind(known, name, "effect");
  journal.check?.();
  if (known?.status === "done") return known.value as T;
  if (approve !== undefined) await checkNotDenied(journal, name);
  const began = await beginEffect(journal, name, onUnknown, approve);
  if (began.status === "done") return began.value as T;
  // An earlier attempt began it (possibly with another policy); with ask, a person decides.
  if (known?.status === "intent" && onUnknown === "ask") throw new OutcomeUnknownError(name, identity.agent, identity.id);
  if (began.key === undefined) throw new NoIdempotencyKeyError(name);
  const value = await fn(began.key);
  return (await journal.record(name, { kind: "effect", phase: "done", value, onUnknown })).value as T;
}

/** A person's answer other than approve to the effect's approval question is final: it never runs on it. */
async function checkNotDenied(journal: StepJournal, name: string): Promise<void> {
  const step = approvalAnswerStep(name);
  const answer = await recordedAnswer(journal, step);
  if (answer !== null) {
    const choice = (answer as { choice?: unknown }).choice;
    throw new ApprovalDeniedError(name, typeof choice === "string" ? choice : "", answer);
  }
}

/** The effect's intent; with approve, a coordinator that holds no permit for these arguments asks instead (ApprovalRequiredError). */
async function beginEffect(journal: StepJournal, name: string, onUnknown: OnUnknown, approve: EffectApproval | undefined): Promise<Written> {
  try {
    return await journal.record(name, { kind: "effect", phase: "intent", onUnknown, ...(approve === undefined ? {} : { approve }) });
  } catch (err) {
    if (approve !== undefined && err instanceof CoordinatorError && err.code === "approval_required") throw new ApprovalRequiredError(name, approve.question, err.message);
    throw err;
  }
}

/** The answer a person gave to the ask kept under `name`, or null when it is not answered yet. */
export async function recordedAnswer(journal: StepJournal, name: string): Promise<unknown> {
  const known = await journal.get(name);
  // Only the coordinator's answer path writes a record of kind answer: a run's own step under this name is no answer.
  checkKind(known, name, "answer");
  return known?.status === "done" ? known.value : null;
}

/** How a result is written: inline up to `inlineBytes`, else uploaded first (up to LIMITS.blobBytes) and named by its blob. */
export async function resultBody(
  value: unknown, inlineBytes: number, upload: (bytes: Uint8Array) => Promise<string>, what: string,
): Promise<{ value: unknown } | { blob: string }> {
  const json = JSON.stringify(value === undefined ? null : value) ?? "null";
  const bytes = new TextEncoder().encode(json);
  if (bytes.byteLength <= inlineBytes) return { value: JSON.parse(json) as unknown };
  if (bytes.byteLength > LIMITS.blobBytes) throw new RangeError(`${what} is at most ${LIMITS.blobBytes} bytes, got ${bytes.byteLength}`);
  return { blob: await upload(bytes) };
}
