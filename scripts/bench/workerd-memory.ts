// Resident memory of the workerd processes below a `wrangler dev`. wrangler dev runs two: a proxy
// listening on the public port (a local-only piece that forwards every request and socket; not
// part of a deployment) and the one running the Worker and its Durable Objects.
import { readdirSync, readFileSync } from "node:fs";
import type { DevServer } from "../../test/e2e/wrangler-dev.ts";

export interface WorkerdMemory {
  /** MiB of the workerd running the Worker and its objects. */
  worker: number;
  /** MiB of wrangler dev's proxy workerd in front of it. */
  proxy: number;
}

export function workerdMemoryMiB(dev: DevServer): WorkerdMemory {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  const kib = { worker: 0, proxy: 0 };
  const walk = (pid: number): void => {
    for (const child of children.get(pid) ?? []) {
      try {
        if (readFileSync(`/proc/${child}/comm`, "utf8").trim() === "workerd") {
          const args = readFileSync(`/proc/${child}/cmdline`, "utf8");
          const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child}/status`, "utf8"))?.[1] ?? 0);
          kib[args.includes(`entry=127.0.0.1:${dev.port}`) ? "proxy" : "worker"] += rss;
        }
      } catch {
        // exited meanwhile
      }
      walk(child);
    }
  };
  walk(dev.proc.pid!);
  return { worker: kib.worker / 1024, proxy: kib.proxy / 1024 };
}
