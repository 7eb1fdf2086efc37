// `baton mcp`'s server: the tools of client/mcp-tools.ts for one agent, fixed on the command line,
// over the client library (the Worker's POST /mcp serves the same tools, each call naming its agent).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Connection } from "../../client/http.ts";
import { batonToolSpecs } from "../../client/mcp-tools.ts";

export interface McpOptions {
  agent: string;
  conn: Connection;
  version: string;
  /** How long `ask` keeps its call open before it returns the message id instead (default 10 minutes). */
  askWaitMs?: number;
  pollMs?: number;
}

export function createMcpServer(options: McpOptions): McpServer {
  const server = new McpServer({ name: "baton", version: options.version });
  for (const spec of batonToolSpecs({ agent: options.agent, conn: options.conn, askWaitMs: options.askWaitMs, pollMs: options.pollMs })) {
    server.registerTool(spec.name, { title: spec.title, description: spec.description, inputSchema: spec.inputSchema }, spec.handler);
  }
  return server;
}
