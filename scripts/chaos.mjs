// `npm run chaos`: runs the TypeScript chaos run (scripts/chaos/main.ts) under tsx, passing arguments on;
// `npm run chaos -- --flood` runs the flood phase (scripts/chaos/flood.ts) instead, and
// `npm run chaos -- --scenario restarts` the coordinator-restart scenario (scripts/chaos/restarts.ts),
// `npm run chaos -- --scenario attacks` the attacks on the work promises (scripts/chaos/attacks.ts),
// `npm run chaos -- --mode steps` durable steps under kill -9 (scripts/chaos/steps.ts), and
// `npm run chaos -- --mode cancel` cancels and interrupts under kill -9 and coordinator restarts
// (scripts/chaos/cancel.ts), `npm run chaos -- --mode lifeline` SIGKILLs of `baton serve` itself
// while its commands write (scripts/chaos/lifeline.ts), `npm run chaos -- --mode schedules` schedules
// through coordinator restarts and clock jumps (scripts/chaos/schedules.ts); the other modes, single
// and pool, are the main run's.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const argv = process.argv.slice(2);
const mode = argv.indexOf("--mode");
const ownFile = mode >= 0 && ["steps", "cancel", "lifeline", "schedules"].includes(argv[mode + 1]) ? argv[mode + 1] : null;
const at = ownFile ? mode : argv.indexOf("--scenario");
const scenario = argv.includes("--flood") ? "flood" : ownFile ?? (at >= 0 ? argv[at + 1] : "main");
const files = { main: "main.ts", flood: "flood.ts", restarts: "restarts.ts", attacks: "attacks.ts", steps: "steps.ts", cancel: "cancel.ts", lifeline: "lifeline.ts", schedules: "schedules.ts" };
if (!(scenario in files)) {
  console.error(`--scenario is one of ${Object.keys(files).join(", ")}, got ${scenario}`);
  process.exit(1);
}
const main = fileURLToPath(new URL(`./chaos/${files[scenario]}`, import.meta.url));
const args = argv.filter((a, i) => a !== "--flood" && (at < 0 || (i !== at && i !== at + 1)));
const r = spawnSync(process.execPath, ["--import", "tsx", main, ...args], { stdio: "inherit" });
process.exit(r.status ?? 1);
