// Between the tests of a file that shares one browser: what a test left behind (a page still open
// after it failed, the compact view or a token in local storage) must not decide the next test. A
// compact view left on by a test that timed out once hid every later test's holder block.
import type { BrowserContext } from "playwright-core";

/** The cookie that names the current test's epoch: a document of a newer epoch starts with empty storage. */
export const EPOCH_COOKIE = "baton-test-epoch";

/**
 * For BrowserContext.addInitScript, so it runs before any script of every document: the first
 * document of a new epoch (resetBrowser) clears the origin's local storage, then the account's
 * token is saved unless the test saved another. Lazily, in the page the next test opens anyway,
 * instead of in a page of its own after every test (a renderer started for nothing: about 0.2
 * CPU-s and half a second under load, 40 times a run).
 */
export function freshStorage({ token, cookie }: { token: string; cookie: string }): void {
  try {
    const epoch = document.cookie.split("; ").find((c) => c.startsWith(`${cookie}=`))?.slice(cookie.length + 1) ?? "";
    if (localStorage.getItem(cookie) !== epoch) {
      localStorage.clear();
      localStorage.setItem(cookie, epoch);
    }
    if (!localStorage.getItem("baton.token")) localStorage.setItem("baton.token", token);
  } catch {
    // about:blank and other opaque origins have no storage
  }
}

let epochs = 0;

/** Closes the pages a test left open and starts a new epoch, so the next test's first page finds no storage (freshStorage). */
export async function resetBrowser(browser: BrowserContext | undefined, origin: string | undefined): Promise<void> {
  if (!browser || !origin) return;
  await Promise.all(browser.pages().filter((p) => p.url() !== "about:blank").map((p) => p.close().catch(() => {})));
  await browser.addCookies([{ name: EPOCH_COOKIE, value: `${process.pid}.${++epochs}`, url: origin }]);
}
