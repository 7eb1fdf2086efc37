// The wire as JSON Schema, from the same zod schemas the worker and the TypeScript client use, for
// the Python client (python/baton/wire-schema.json), with the wire's LIMITS beside it. `npm run wire-schema` writes it; a unit test
// fails when the committed file and the schemas drift apart.
import * as z from "zod/mini";
import { WIRE_ENUMS } from "../../worker/wire/enums.ts";
import { clientFrameSchema, LIMITS } from "../../worker/wire/protocol.ts";
import { ROUTES, type RouteKey } from "../../worker/wire/routes.ts";
import { serverFrameSchema } from "../../worker/wire/server-frames.ts";
import { outputEventSchema } from "../../worker/wire/output.ts";

export const WIRE_SCHEMA_PATH = "python/baton/wire-schema.json";

export function wireJsonSchema(): Record<string, unknown> {
  const convert = (schema: z.ZodMiniType) => z.toJSONSchema(schema, { unrepresentable: "any" });
  return {
    comment: "Generated from worker/wire by `npm run wire-schema`; do not edit.",
    client_frame: convert(clientFrameSchema),
    server_frame: convert(serverFrameSchema),
    /** What GET …/messages/{id}/output sends, one event at a time (worker/wire/output.ts). */
    output_event: convert(outputEventSchema),
    limits: LIMITS,
    /** The closed sets of words the frames and bodies use, by field name (worker/wire/enums.ts). */
    enums: WIRE_ENUMS,
    /** Every HTTP route as "METHOD /path" with the scope it needs (worker/wire/routes.ts), so the Python client builds only paths the table has. */
    routes: Object.fromEntries((Object.keys(ROUTES) as RouteKey[]).map((key) => [key, ROUTES[key].scope])),
  };
}

export function wireJsonSchemaText(): string {
  return `${JSON.stringify(wireJsonSchema(), null, 1)}\n`;
}
