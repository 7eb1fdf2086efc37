// When an agent object tells its directory about itself: a report REPORT_DELAY_MS after a change,
// built from the state then; a retry REPORT_RETRY_MS after a failed one; a confirmation every two
// TTLs while connected (directory-reporter.ts). The object plans its alarm for the deadlines here.
// Beside presence, the directory keeps each agent's counts of schedules and A2A push targets.
import type { AgentMetrics } from "../rules/metrics.ts";
import { webhookCounts } from "../rules/webhook-exposure.ts";
import type { Presence } from "../wire/server-frames.ts";
import type { AgentIdentity } from "./agent-store.ts";
import type { AgentDirectory } from "./directory-object.ts";
import { DirectoryReporter, REPORT_RETRY_MS } from "./directory-reporter.ts";
import { directoryObjectName } from "./names.ts";
import type { Clock } from "./clock.ts";

/** How long after a change its presence report is built (changed). */
const REPORT_DELAY_MS = 10;

/** What a report reads of the object, and what it does when one fails (plans the alarm for the retry). */
export interface PresenceSource {
  read(): { presence: Presence; metrics: AgentMetrics | null };
  forgetMetrics(): void;
  failed(): void;
}

export class PresenceReports {
  private readonly reporter: DirectoryReporter;
  /** A report to the directory failed: the alarm tries again then (in memory: after an eviction the directory's own lease tells the truth). */
  private retryAt: number | null = null;
  /** A report is waiting for its delay (changed). */
  private queued = false;

  constructor(
    sql: SqlStorage, ttlMs: number, clock: Clock, private readonly ctx: DurableObjectState, private readonly directories: DurableObjectNamespace<AgentDirectory>,
    private readonly identity: AgentIdentity | null, private readonly source: PresenceSource,
  ) {
    this.reporter = new DirectoryReporter(sql, ttlMs, clock, () => source.failed());
  }

  /** The deadlines the alarm must wake for: the next confirmation and the retry of a failed report. */
  deadlines(): (number | null)[] {
    return [this.reporter.nextConfirmation(), this.retryAt];
  }

  /** A report failed at `now`: tried again after REPORT_RETRY_MS. */
  failedAt(now: number): void {
    this.retryAt = now + REPORT_RETRY_MS;
  }

  /** The alarm: a due retry reports again, a due confirmation confirms. */
  wake(now: number): void {
    if (this.retryAt !== null && now >= this.retryAt) {
      this.retryAt = null;
      this.changed();
    }
    if (this.identity) this.reporter.confirmIfDue(this.ctx, this.directories, this.identity.account, this.identity.agent, now, () => this.changed());
  }

  /**
   * Called only where presence may have changed. The report is built REPORT_DELAY_MS later, from
   * the state then: the frames of the event that changed it leave first (a report built at once,
   * and the directory's commit it causes, held them back on the same thread), and the changes of
   * that span, such as a connection's open and its claim, share one report. The reporter still
   * sends only what really changed.
   */
  changed(): void {
    if (!this.identity || this.queued) return;
    this.queued = true;
    this.ctx.waitUntil(new Promise<void>((done) => setTimeout(() => {
      this.queued = false;
      try {
        this.report();
      } catch (err) {
        // Not sent: the alarm tries again after REPORT_RETRY_MS, as after a failed RPC.
        console.error(`presence report failed: ${String(err)}`);
        this.source.failed();
      } finally {
        done();
      }
    }, REPORT_DELAY_MS)));
  }

  /** A count the directory keeps for the account's limit changed: told to it, never awaited. */
  countChanged(kind: "schedules" | "push_targets", count: number): void {
    if (!this.identity) return;
    const { account, agent } = this.identity;
    const directory = this.directories.get(this.directories.idFromName(directoryObjectName(account)));
    const told = kind === "schedules" ? directory.setScheduleCount(agent, count) : directory.setPushTargetCount(agent, count);
    this.ctx.waitUntil(told.catch((err: unknown) => console.error(`${kind} count not reported: ${String(err)}`)));
  }

  private report(): void {
    if (!this.identity) return;
    const { presence, metrics } = this.source.read();
    // The directory shows every token of the account (GET /agents, dashboards): webhook counts only.
    const listed = { ...presence, webhook: presence.webhook && webhookCounts(presence.webhook) };
    this.reporter.report(this.ctx, this.directories, this.identity.account, listed, metrics, () => this.source.forgetMetrics());
  }
}
