// Between the tests of a file that shares one browser: what a test left behind (a page still open
// after it failed, the compact view or a token in local storage) must not decide the next test. A
// compact view left on by a test that timed out once hid every later test's holder block.
import type { BrowserContext } from "playwright-core";

/** Closes the pages a test left open and clears local storage of the dashboard's origin. */
export async function resetBrowser(browser: BrowserContext | undefined, origin: string | undefined): Promise<void> {
  if (!browser || !origin) return;
  await Promise.all(browser.pages().filter((p) => p.url() !== "about:blank").map((p) => p.close().catch(() => {})));
  const page = await browser.newPage();
  try {
    // A path that serves no script: nothing on it reads or writes the storage meanwhile.
    await page.goto(`${origin}/favicon.ico`);
    await page.evaluate(() => localStorage.clear());
  } catch {
    // The coordinator is down (a test stopped it and failed): the next test starts its own page anyway.
  } finally {
    await page.close();
  }
}
