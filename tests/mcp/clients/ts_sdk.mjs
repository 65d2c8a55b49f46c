// The official TypeScript SDK client (@modelcontextprotocol/sdk) drives `cellbox mcp` over stdio, or
// `cellbox serve` over streamable HTTP when given --url URL --token TOKEN.
// Usage: node ts_sdk.mjs BINARY CASES_JSON [--url URL --token TOKEN]
// CASES_JSON is {"name": {"cells": [...]}, ...}; prints one JSON object: the SDK's version and,
// per case, the CallToolResult exactly as Client.callTool hands it to the host.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [binary, casesJson, ...rest] = process.argv.slice(2);
const option = (name) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};
const url = option("--url");
const cases = JSON.parse(casesJson);
const sdkPackage = new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
const version = JSON.parse(readFileSync(sdkPackage, "utf8")).version;

const transport = url
  ? new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${option("--token")}` } },
    })
  : new StdioClientTransport({ command: binary, args: ["mcp"], env: process.env, stderr: "inherit" });
const client = new Client({ name: "cellbox-mcp-clients", version: "0" });
await client.connect(transport);
// listTools first, as hosts do: the SDK then checks each result's structuredContent
// against the tool's outputSchema (and rejects a result that lacks it).
await client.listTools();
const results = {};
for (const [name, args] of Object.entries(cases)) {
  try {
    results[name] = await client.callTool({ name: "eval", arguments: args }, undefined, { timeout: 120000 });
  } catch (error) {
    results[name] = { client_error: String(error && error.message ? error.message : error) };
  }
}
await client.close();
process.stdout.write(JSON.stringify({ version, results }));
