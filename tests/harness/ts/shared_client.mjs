// A TypeScript SDK (1.x) client of the shared router: it starts `mcp-router connect` as an
// agent would list it, lists the tools, calls one, reads a resource through the resource tools,
// answers an elicitation with its own name, prints one JSON line with what it saw, then keeps
// the session open for HOLD_MS (so the test can look at the processes) and closes it.
// Usage: node shared_client.mjs ROUTER CONFIG NAME HOLD_MS
//    or: node shared_client.mjs URL SECRET NAME HOLD_MS (streamable HTTP, the bearer secret)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [router, config, name, hold] = process.argv.slice(2);
const transport = router.startsWith('http')
  ? new StreamableHTTPClientTransport(new URL(router), {
    requestInit: { headers: { Authorization: `Bearer ${config}` } },
  })
  : new StdioClientTransport({
    command: router,
    args: ['connect', '--config', config],
    env: process.env,
    stderr: 'inherit',
  });
const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } });
let asked = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  asked += 1;
  return { action: 'accept', content: { name } };
});
await client.connect(transport);
const text = (result) => result.content?.[0]?.text ?? '';
const { tools } = await client.listTools();
const echo = text(await client.callTool({ name: 'mcp__notes__echo', arguments: { text: name } }));
const read = text(await client.callTool({
  name: 'read_mcp_resource',
  arguments: { server: 'docs', uri: 'demo://docs/README.md' },
}));
const ask = text(await client.callTool({ name: 'mcp__docs__ask', arguments: {} }));
console.log(JSON.stringify({
  tools: tools.map((t) => t.name),
  echo,
  read: read.includes('"contents"'),
  ask,
  asked,
}));
await new Promise((resolve) => setTimeout(resolve, Number(hold)));
await client.close();
