#!/usr/bin/env node
// Entry of the `baton` command: registers the TypeScript loader (Node 20 has no type stripping)
// and hands over to cli/main.ts.
import { register } from "tsx/esm/api";

register();
await import("./main.ts");
