// `npm run chaos`: runs the TypeScript chaos run (scripts/chaos/main.ts) under tsx, passing arguments on.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("./chaos/main.ts", import.meta.url));
const r = spawnSync(process.execPath, ["--import", "tsx", main, ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
