// Types of examples/verify-webhook.mjs, for TypeScript callers (the tests).
export function verifyBatonSignature(secret: string, header: string | null | undefined, rawBody: string, toleranceSeconds?: number, nowSeconds?: number): boolean;
