// The official TypeScript SDK client, used directly as an application would: the demo conversation (list tools,
// add, a countdown with progress, read a resource), then exit 0; an error ends it with exit 1.
//   node ts_client.cjs streamable|sse URL [--timeout MS]
//   node ts_client.cjs stdio [--timeout MS] -- SERVER_COMMAND...
// MCPTAPE_TS_SDK names the SDK's package folder (@modelcontextprotocol/sdk).
const path = require("path");
const sdk = (p) => require(path.join(process.env.MCPTAPE_TS_SDK, "dist/cjs", p));
const { Client } = sdk("client/index.js");

async function main() {
  const argv = process.argv.slice(2);
  const dashes = argv.indexOf("--");
  const own = dashes >= 0 ? argv.slice(0, dashes) : argv;
  const t = own.indexOf("--timeout");
  const timeout = t >= 0 ? Number(own[t + 1]) : undefined;
  const kind = own[0];
  let transport;
  if (kind === "stdio") {
    const { StdioClientTransport } = sdk("client/stdio.js");
    const server = argv.slice(dashes + 1);
    transport = new StdioClientTransport({ command: server[0], args: server.slice(1), env: process.env });
  } else if (kind === "sse") {
    const { SSEClientTransport } = sdk("client/sse.js");
    transport = new SSEClientTransport(new URL(own[1]));
  } else {
    const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");
    transport = new StreamableHTTPClientTransport(new URL(own[1]));
  }
  const client = new Client({ name: "mcptape-scoreboard", version: "1" });
  const options = timeout ? { timeout } : undefined;
  await client.connect(transport);  // the handshake at the SDK's own timeout: the faults come after it
  await client.listTools(undefined, options);
  await client.callTool({ name: "add", arguments: { a: 2, b: 3 } }, undefined, options);
  await client.callTool({ name: "countdown", arguments: { steps: 3 } }, undefined, { ...options, onprogress: () => {} });
  await client.readResource({ uri: "demo://hello" }, options);
  console.log("done");
  await client.close();
  process.exit(0);
}

main().catch((e) => { console.error(`ts client: ${e && e.message}`); process.exit(1); });
