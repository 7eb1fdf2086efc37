// Names checked before anything is sent, with the rule spelled out (the coordinator checks again).
import { AGENT_NAME, SESSION_NAME } from "../../worker/wire/protocol.ts";
import { UsageError } from "./errors.ts";

export function agentName(raw: string): string {
  if (!AGENT_NAME.test(raw)) {
    throw new UsageError(`bad agent name ${JSON.stringify(raw)}: 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit`);
  }
  return raw;
}

export function sessionName(raw: string): string {
  if (!SESSION_NAME.test(raw)) {
    throw new UsageError(`bad session name ${JSON.stringify(raw)}: 1-128 chars of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit`);
  }
  return raw;
}
