// One wire, two languages: the JSON Schema the Python client checks frames against is generated
// from the TypeScript schemas, and this fails when the committed copy drifts from them.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { WIRE_SCHEMA_PATH, wireJsonSchemaText } from "../../scripts/wire/json-schema.ts";

describe("python/baton/wire-schema.json", () => {
  it("is exactly what worker/wire's schemas generate (run `npm run wire-schema` after changing the wire)", () => {
    expect(readFileSync(WIRE_SCHEMA_PATH, "utf8")).toBe(wireJsonSchemaText());
  });
});
