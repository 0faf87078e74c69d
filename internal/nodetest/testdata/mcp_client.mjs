// The official MCP TypeScript SDK's client, driven by hearth's Go tests
// (host/mcp, cmd/hearth): it does what an orchestrating agent does and
// prints what it saw as one JSON object on stdout.
//
//   node mcp_client.mjs PLAN_JSON
//
// PLAN_JSON: {"transport": "stdio", "command": "...", "args": [...],
// "env": {...}} or {"transport": "http", "url": "...", "token": "..."},
// and "calls": a list of {"tool": NAME, "arguments": {...}} to make in
// order (each with a progress token), "read": resource URIs to read
// after them ("{session}" stands for the session of the first call's
// result).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(process.argv[2]);
let transport;
if (plan.transport === "stdio") {
  transport = new StdioClientTransport({ command: plan.command, args: plan.args, env: plan.env, stderr: "inherit" });
} else {
  transport = new StreamableHTTPClientTransport(new URL(plan.url), {
    requestInit: { headers: plan.token ? { Authorization: `Bearer ${plan.token}` } : {} },
  });
}
const client = new Client({ name: "hearth-test", version: "1.0.0" });
const out = { calls: [], reads: [] };
try {
  await client.connect(transport);
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, description: t.description, input: Object.keys(t.inputSchema.properties ?? {}) }));
  out.resources = (await client.listResources()).resources.map((r) => r.uri);
  out.templates = (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate);
  for (const call of plan.calls ?? []) {
    const progress = [];
    const res = await client.callTool({ name: call.tool, arguments: call.arguments }, undefined, {
      onprogress: (p) => progress.push(p),
      timeout: 120000,
    });
    out.calls.push({ tool: call.tool, isError: !!res.isError, text: res.content.map((c) => c.text).join("\n"), structured: res.structuredContent ?? null, progress });
  }
  const first = out.calls.find((c) => c.structured && c.structured.session);
  for (const uri of plan.read ?? []) {
    const u = uri.replace("{session}", first ? first.structured.session : "none");
    try {
      const r = await client.readResource({ uri: u });
      out.reads.push({ uri: u, mimeType: r.contents[0].mimeType, json: JSON.parse(r.contents[0].text) });
    } catch (e) {
      out.reads.push({ uri: u, error: String(e.message ?? e) });
    }
  }
} catch (e) {
  out.error = String(e.stack ?? e);
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
