// `baton mcp AGENT`: an MCP server on stdio for an MCP host (Claude Code, Cursor, any host): ask a
// person out of band, see who serves AGENT, send it messages, hold session leases. The host starts
// it with the coordinator's URL and a token (flags or BATON_URL / BATON_TOKEN); stdout is the
// protocol's, so everything for people goes to stderr.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { defineCommand } from "../lib/command.ts";
import { CLIError } from "../lib/errors.ts";
import { resolveConnection } from "../lib/config.ts";
import { createMcpServer } from "../lib/mcp-server.ts";
import { agentName } from "../lib/names.ts";
import { version } from "../lib/version.ts";

export default defineCommand({
  path: ["mcp"],
  summary: "Serve MCP tools on stdio for an MCP host: ask a person, who, send, session leases.",
  positionals: [{ name: "AGENT", description: "the agent whose questions, presence and messages the tools use", required: true }],
  options: {},
  async run({ args, options }) {
    const agent = agentName(args[0]!);
    const conn = resolveConnection(options);
    const server = createMcpServer({ agent, conn, version: version() });
    const transport = new StdioServerTransport();
    // The SDK closes the transport on input it cannot read (a line over its buffer): say so, and fail.
    let broken: Error | null = null;
    transport.onerror = (error) => {
      broken ??= error;
      process.stderr.write(`baton mcp: ${error.message}\n`);
    };
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    process.stdin.on("end", () => void server.close());
    await server.connect(transport);
    process.stderr.write(`baton mcp: serving tools for ${agent} at ${conn.url} on stdio\n`);
    await closed;
    if (broken !== null) throw new CLIError(`the MCP connection failed: ${(broken as Error).message}`);
  },
});
