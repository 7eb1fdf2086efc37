// Runs in every workerd test file: what a file leaves open is closed before its runner goes away.
import { afterAll } from "vitest";
import { closeLeftoverSockets } from "./helpers.ts";

afterAll(closeLeftoverSockets);
