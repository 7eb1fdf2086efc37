// `npm run wire-schema`: writes the wire's JSON Schema and its Python types for the Python client
// (see scripts/wire/json-schema.ts and scripts/wire/python-types.ts).
import { writeFileSync } from "node:fs";
import { WIRE_SCHEMA_PATH, wireJsonSchemaText } from "./wire/json-schema.ts";
import { WIRE_TYPES_PATH, wirePythonTypesText } from "./wire/python-types.ts";

writeFileSync(WIRE_SCHEMA_PATH, wireJsonSchemaText());
console.log(`wrote ${WIRE_SCHEMA_PATH}`);
writeFileSync(WIRE_TYPES_PATH, wirePythonTypesText());
console.log(`wrote ${WIRE_TYPES_PATH}`);
