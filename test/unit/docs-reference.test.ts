// The reference pages in docs/reference are generated from the code (scripts/docs/*.ts): the route
// table, LIMITS, ERROR_CODES, the CLI's help and the metric families. This fails when a committed
// page drifts from what the code generates: run `npm run docs` after changing any of them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unstatedLimits } from "../../scripts/docs/limits.ts";
import { REFERENCE_PAGES } from "../../scripts/docs/pages.ts";

const ROOT = join(import.meta.dirname, "../..");

describe("docs/reference", () => {
  it.each(REFERENCE_PAGES.map((page) => [page.path, page] as const))("%s is what the code generates (run `npm run docs`)", async (_, page) => {
    expect(readFileSync(join(ROOT, page.path), "utf8")).toBe(await page.text());
  });

  it("the limits page states every field of LIMITS", () => {
    expect(unstatedLimits()).toEqual([]);
  });
});
