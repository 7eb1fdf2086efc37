// `npm run chaos`: runs the TypeScript chaos run (scripts/chaos/main.ts) under tsx, passing arguments on;
// `npm run chaos -- --flood` runs the flood phase (scripts/chaos/flood.ts) instead.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const flood = process.argv.includes("--flood");
const main = fileURLToPath(new URL(flood ? "./chaos/flood.ts" : "./chaos/main.ts", import.meta.url));
const args = process.argv.slice(2).filter((a) => a !== "--flood");
const r = spawnSync(process.execPath, ["--import", "tsx", main, ...args], { stdio: "inherit" });
process.exit(r.status ?? 1);
