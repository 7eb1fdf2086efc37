// The browser side of the dashboard's end-to-end files (dashboard*.test.ts):
// one headless Chromium (Debian's, through playwright-core) per file with a throwaway profile, and
// the page checks both files make. Each file still starts its own `wrangler dev`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";

const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
  "--no-first-run", "--disable-component-update", "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  /** Closes the browser and deletes its profile. */
  close(): Promise<void>;
}

/** Launches Chromium with a fresh profile at the given viewport. */
export async function launchBrowser(viewport: { width: number; height: number }): Promise<Browser> {
  const profileDir = mkdtempSync(join(tmpdir(), "baton-chromium-"));
  const context = await chromium.launchPersistentContext(profileDir, { executablePath: "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS, viewport });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

/** Marks the page, so a later check can tell that what it shows came without a reload. */
export async function markLoaded(page: Page): Promise<void> {
  await page.evaluate(() => ((window as unknown as { loadedOnce: boolean }).loadedOnce = true));
}

/** A new page on the dashboard at `url`, live, marked so that later checks can tell it was never reloaded. */
export async function openLive(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(url);
  await page.locator('#status[data-state="live"]').waitFor();
  await markLoaded(page);
  return page;
}

export async function stillSameLoad(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce === true);
}

/** How far the widest element sticks out past the viewport's right edge, in CSS pixels (logged with its name). */
export async function horizontalOverflow(page: Page): Promise<number> {
  const widest = await page.evaluate(() => {
    let worst = { right: -Infinity, name: "" };
    for (const e of document.querySelectorAll("body *")) {
      const right = e.getBoundingClientRect().right;
      if (right > worst.right) worst = { right, name: `${e.tagName.toLowerCase()}.${e.className}` };
    }
    return { overflow: worst.right - window.innerWidth, name: worst.name };
  });
  if (widest.overflow > 0) console.log(`widest element: ${widest.name}, ${widest.overflow} px past the viewport`);
  return widest.overflow;
}

/** An agent's card on the dashboard. */
export const card = (page: Page, agent: string) => page.locator(`article.agent[data-agent="${agent}"]`);
