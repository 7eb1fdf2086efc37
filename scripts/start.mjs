// Starts the coordinator locally with `wrangler dev` (no Cloudflare account needed), installing
// the npm packages first on a fresh clone. Extra arguments go to wrangler, e.g. `npm start -- --port 9000`.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

if (!existsSync("node_modules/.bin/wrangler")) {
  const install = spawnSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
  if (install.status !== 0) process.exit(install.status ?? 1);
}
const args = process.argv.slice(2);
const port = args.includes("--port") ? [] : ["--port", "8787"];
const dev = spawnSync("node_modules/.bin/wrangler", ["dev", ...port, ...args], { stdio: "inherit" });
process.exit(dev.status ?? 0);
