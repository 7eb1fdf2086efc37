// The reference pages generated from the code: each page's path and how to make its text.
// `npm run docs` writes them; test/unit/docs-reference.test.ts fails when a committed page drifts.
import { cliPage, CLI_PAGE } from "./cli-help.ts";
import { errorCodesPage, ERROR_CODES_PAGE } from "./error-codes.ts";
import { lifecyclePage, LIFECYCLE_PAGE } from "./lifecycle.ts";
import { limitsPage, LIMITS_PAGE } from "./limits.ts";
import { metricsPage, METRICS_PAGE } from "./metrics.ts";
import { routesPage, ROUTES_PAGE } from "./routes.ts";

export const REFERENCE_PAGES: readonly { path: string; text: () => string | Promise<string> }[] = [
  { path: ROUTES_PAGE, text: routesPage },
  { path: LIMITS_PAGE, text: limitsPage },
  { path: ERROR_CODES_PAGE, text: errorCodesPage },
  { path: CLI_PAGE, text: cliPage },
  { path: METRICS_PAGE, text: metricsPage },
  { path: LIFECYCLE_PAGE, text: lifecyclePage },
];
