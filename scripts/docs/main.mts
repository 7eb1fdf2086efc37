// `npm run docs`: writes docs/reference/*.md from the code (see scripts/docs/pages.ts).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { REFERENCE_PAGES } from "./pages.ts";

const ROOT = join(import.meta.dirname, "../..");
for (const page of REFERENCE_PAGES) {
  const path = join(ROOT, page.path);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, await page.text());
  console.log(`wrote ${page.path}`);
}
