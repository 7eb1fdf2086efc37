// `npm run wire-schema`: writes the wire's JSON Schema for the Python client (see scripts/wire/json-schema.ts).
import { writeFileSync } from "node:fs";
import { WIRE_SCHEMA_PATH, wireJsonSchemaText } from "./wire/json-schema.ts";

writeFileSync(WIRE_SCHEMA_PATH, wireJsonSchemaText());
console.log(`wrote ${WIRE_SCHEMA_PATH}`);
