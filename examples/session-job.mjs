#!/usr/bin/env node
// A job that must not run twice at once, anywhere: it holds the session lease "nightly-report"
// while it works, and tags its writes with the lease's fence so a late, stale run is refused.
//
//   node examples/session-job.mjs
import { LeaseHeldError, withSessionLease } from "baton-client";

try {
  const rows = await withSessionLease("nightly-report", async (lease) => {
    console.error(`holding nightly-report with fence ${lease.fence}`);
    const rows = [];
    for (let step = 1; step <= 3; step++) {
      lease.signal.throwIfAborted(); // lease gone: stop before doing more
      await new Promise((r) => setTimeout(r, 200));
      rows.push({ step, fence: lease.fenceToken }); // a real sink would refuse an older fence
    }
    return rows;
  }, {
    url: process.env.BATON_URL ?? "http://127.0.0.1:8787",
    token: process.env.BATON_TOKEN ?? "baton-dev-token",
    ttlSeconds: 10,
  });
  console.log(`wrote ${rows.length} rows`);
} catch (err) {
  if (!(err instanceof LeaseHeldError)) throw err;
  console.error(`another run holds nightly-report: ${err.message}`);
  process.exitCode = 3;
}
