// Bundles the dashboard (worker/dashboard/*.ts, type-checked by `npm run typecheck`) into
// worker/public/app.js, the one script index.html loads. wrangler runs it before `wrangler dev`
// and `wrangler deploy` (wrangler.toml [build]), so a fresh clone, `npm start`, the end-to-end
// tests and a deploy all serve the current sources; `npm run build` runs it too. Many `wrangler
// dev` may start at once (tests): the file is written only when its bytes change, through a
// rename, so no server ever reads half a file and an unchanged build touches nothing.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "worker/public/app.js");

const result = await build({
  entryPoints: [join(ROOT, "worker/dashboard/app.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  write: false,
  legalComments: "none",
  logLevel: "warning",
});
const code = result.outputFiles[0].contents;
if (!existsSync(OUT) || !readFileSync(OUT).equals(code)) {
  // Staged outside the assets directory, which a running `wrangler dev` watches.
  const stagingDir = join(ROOT, ".wrangler/tmp");
  mkdirSync(stagingDir, { recursive: true });
  const staged = join(stagingDir, `dashboard-${process.pid}.js`);
  writeFileSync(staged, code);
  renameSync(staged, OUT);
}
