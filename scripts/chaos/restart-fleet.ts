// The runners of the restarts scenario: every agent served by one in-process serve() per machine
// label, through the client library of the tree under test, so each reconnects after a coordinator
// restart with the library's own backoff and jitter. Records every status each runner reports and
// checks, as it goes, that the fences holders hear only grow per agent.
import { join } from "node:path";
import type { ServeHandle, ServeStatus } from "../../client/index.ts";

type NodeClient = typeof import("../../client/node.ts");

export interface Runner {
  agent: string;
  machine: string;
  handle: ServeHandle;
  status: ServeStatus;
}

export interface FleetOptions {
  treeRoot: string;
  url: string;
  token: string;
  agents: readonly string[];
  machines: readonly string[];
}

export class RestartFleet {
  readonly runners: Runner[] = [];
  /** Per agent: the highest fence a runner was told it holds. */
  private readonly heardFence = new Map<string, number>();
  /** Fences told to a holder that were not above the agent's last one (must stay empty). */
  readonly fenceRegressions: string[] = [];

  private constructor(private readonly client: NodeClient, private readonly opts: FleetOptions) {}

  static async start(opts: FleetOptions): Promise<RestartFleet> {
    const client = (await import(join(opts.treeRoot, "client/node.ts"))) as NodeClient;
    const fleet = new RestartFleet(client, opts);
    for (const agent of opts.agents) for (const machine of opts.machines) fleet.add(agent, machine);
    return fleet;
  }

  private add(agent: string, machine: string): void {
    const runner = { agent, machine, status: { kind: "connecting" } } as Runner;
    runner.handle = this.client.serve(agent, () => undefined, {
      url: this.opts.url,
      token: this.opts.token,
      machine,
      onStatus: (status) => {
        runner.status = status;
        if (status.kind === "holder") this.heardHolder(agent, machine, status.fence);
      },
    });
    this.runners.push(runner);
  }

  private heardHolder(agent: string, machine: string, fence: number): void {
    const last = this.heardFence.get(agent) ?? 0;
    if (fence <= last) this.fenceRegressions.push(`${agent}: ${machine} told it holds fence ${fence} after fence ${last}`);
    else this.heardFence.set(agent, fence);
  }

  /** The runners that believe they hold `agent`'s lease now. */
  holders(agent: string): Runner[] {
    return this.runners.filter((r) => r.agent === agent && r.status.kind === "holder");
  }

  /** Every agent has exactly one runner that holds its lease, with a fence above `above` (its fence before the restart). */
  allHeld(above: ReadonlyMap<string, number>): boolean {
    return this.opts.agents.every((a) => {
      const held = this.holders(a);
      return held.length === 1 && held[0]!.status.kind === "holder" && held[0]!.status.fence > (above.get(a) ?? 0);
    });
  }

  /**
   * Settled: every runner is connected (holder or standby) and every agent has exactly one holder
   * with a fence above `above` (its fence before the restart), so nobody is still in backoff.
   */
  settled(above: ReadonlyMap<string, number>): boolean {
    return this.runners.every((r) => r.status.kind === "holder" || r.status.kind === "standby") && this.allHeld(above);
  }

  async stop(): Promise<void> {
    await Promise.allSettled(this.runners.map((r) => r.handle.stop()));
  }
}
