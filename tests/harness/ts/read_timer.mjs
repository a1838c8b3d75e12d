// A TypeScript SDK client reading one resource again and again from its own server-everything
// over stdio, as the bench's EV1 rows do with rmcp: `sdk` is @modelcontextprotocol/sdk's client
// (1.x), `client` is @modelcontextprotocol/client (2.x), at the versions the harness's lock file
// pins. Prints one JSON line, {"version", "median_us", "cpu_us_per_read"} (this process's user +
// system time over the timed reads; the server is another process).
// Usage: node read_timer.mjs sdk|client SERVER_SCRIPT URI WARMUP READS
import { readFileSync } from 'node:fs';

const [which, script, uri, warmup, reads] = process.argv.slice(2);
const [pkg, main, stdio] = which === 'client'
  ? ['@modelcontextprotocol/client', '@modelcontextprotocol/client', '@modelcontextprotocol/client/stdio']
  : ['@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/client/index.js', '@modelcontextprotocol/sdk/client/stdio.js'];
const { Client } = await import(main);
const { StdioClientTransport } = await import(stdio);
const manifest = new URL(`../node_modules/${pkg}/package.json`, import.meta.url);
const { version } = JSON.parse(readFileSync(manifest, 'utf8'));

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [script, 'stdio'],
  stderr: 'ignore',
});
const client = new Client({ name: 'ts-read-timer', version: '1.0.0' });
await client.connect(transport);
for (let i = 0; i < Number(warmup); i++) {
  JSON.stringify(await client.readResource({ uri }));
}
const samples = [];
const before = process.cpuUsage();
for (let i = 0; i < Number(reads); i++) {
  const started = process.hrtime.bigint();
  JSON.stringify(await client.readResource({ uri }));
  samples.push(Number(process.hrtime.bigint() - started) / 1000);
}
const cpu = process.cpuUsage(before);
samples.sort((a, b) => a - b);
console.log(JSON.stringify({
  version,
  median_us: samples[samples.length >> 1],
  cpu_us_per_read: (cpu.user + cpu.system) / Number(reads),
}));
await client.close();
