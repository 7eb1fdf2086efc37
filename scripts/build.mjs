// `npm run build`: compiles the client library (with what it imports of worker/wire and
// worker/rules) to JavaScript with type declarations under dist/, which is what `exports` points
// at and what `npm pack` ships, then bundles the CLI into dist/cli/ (`bin`): one file per command
// loaded on demand, with zod inlined, since loading its 200-odd module files cost a one-shot
// command like `baton who` about as much as Node's own start. tsx stays a development tool. Last,
// the dashboard's script (scripts/build-dashboard.mjs, which wrangler also runs before dev and deploy).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, renameSync, rmSync } from "node:fs";
import { build } from "esbuild";

// Built beside dist/ and swapped in at the end: a test running the CLI from dist/ while another
// packs the package (prepack builds) never finds it missing or half written.
const staging = `dist.build-${process.pid}`;
rmSync(staging, { recursive: true, force: true });
// --noCheck: `npm run typecheck` checks these files (tsconfig.node.json holds client/ with the same
// options); this emits them with their declarations, and the build blocks the end-to-end lanes.
const tsc = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json", "--noCheck", "--outDir", staging], { stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
rmSync(`${staging}/cli`, { recursive: true, force: true });
await build({
  entryPoints: { main: "cli/main.ts" },
  outdir: `${staging}/cli`,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // ws stays a dependency: it loads optional native helpers by require at run time. The
  // OpenTelemetry API is the user's own (an optional peer): loaded when installed, never bundled.
  external: ["ws", "@opentelemetry/api"],
  logLevel: "warning",
});
chmodSync(`${staging}/cli/main.js`, 0o755);
const previous = `dist.old-${process.pid}`;
if (existsSync("dist")) renameSync("dist", previous);
renameSync(staging, "dist");
rmSync(previous, { recursive: true, force: true });
const dashboard = spawnSync(process.execPath, ["scripts/build-dashboard.mjs"], { stdio: "inherit" });
if (dashboard.status !== 0) process.exit(dashboard.status ?? 1);
