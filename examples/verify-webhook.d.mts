// Types of examples/verify-webhook.mjs, for TypeScript callers (the tests).
export function verifyBatonWebhook(secret: string, headers: Record<string, string>, rawBody: string): unknown;
