// A skills server (SEP-2640) on the TypeScript SDK (@modelcontextprotocol/server, pinned in
// package.json): the skills below the folder given, served over stdio by the SDK's own skills
// extension (`./ext/skills`), with `resources/directory/read`.
// Usage: node skills_server.mjs DIR
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node';

const mcp = new McpServer({ name: 'ts-skills', version: '1.0.0' });
const skills = await loadSkills(process.argv[2]);
skills.attach(mcp);
await mcp.connect(new StdioServerTransport());
