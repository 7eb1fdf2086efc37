// `npm run build`: compiles the CLI and the client library (with what they import of worker/wire
// and worker/rules) to JavaScript with type declarations under dist/, which is what `bin` and
// `exports` point at and what `npm pack` ships. tsx stays a development tool.
import { spawnSync } from "node:child_process";
import { chmodSync, rmSync } from "node:fs";

rmSync("dist", { recursive: true, force: true });
const tsc = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], { stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
chmodSync("dist/cli/main.js", 0o755);
