// The command of `npm run chaos -- --mode lifeline`: writes to a sink outside baton (a file the
// chaos run reads, appended with O_APPEND, each line stamped with the time just before its write)
// every 10 ms while it works, from three processes: itself; a child that
// ignores SIGTERM; and a process that escaped its tree (started by a shell that exits at once, in a
// session of its own: setsid). The command replies after CHAOS_WORK_MS at most; the other two tick
// on until something kills them (at most a minute, so a failed run leaves nothing behind for long).
// Each write names the serve instance that started the run (CHAOS_INSTANCE, inherited).
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

const role = process.argv[2] ?? "command";
const sink = process.env.CHAOS_SINK_FILE;
const instance = process.env.CHAOS_INSTANCE ?? "";
const id = process.env.BATON_MESSAGE_ID ?? "";
const self = new URL(import.meta.url).pathname;

async function tick(untilMs) {
  while (Date.now() < untilMs) {
    appendFileSync(sink, `${Date.now()} ${instance} ${role} ${id} ${process.pid}\n`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

if (role === "command") {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  spawn(process.execPath, [self, "stubborn"], { stdio: "ignore" }).unref();
  spawn("/bin/sh", ["-c", `setsid "${process.execPath}" "${self}" escaped >/dev/null 2>&1 &`], { stdio: "ignore" }).unref();
  await tick(Date.now() + Math.random() * Number(process.env.CHAOS_WORK_MS ?? 1000));
  process.stdout.write(`wrote ${text.trim()}`);
  process.exit(0);
}
if (role === "stubborn") process.on("SIGTERM", () => {});
await tick(Date.now() + 60_000);
