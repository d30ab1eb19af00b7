// The MCP benchmark client of `repoctx bench-serve`: starts `repoctx mcp REPO` through the official MCP
// client SDK (stdio transport), lists its tools, then times tools/call round trips of `retrieve` (sparse,
// free-text queries drawn from the repository's symbols) and writes {calls, p50_ms, p99_ms, min_ms} as JSON.
//
//   node bench/mcp_roundtrip.mjs --sdk DIR --repoctx BIN --repo REPO [--db DB] [--calls N] --out FILE
//
// DIR holds node_modules/@modelcontextprotocol/sdk (scripts/setup.sh installs it under ~/.cache/repoctx/node).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

function args() {
  const a = { calls: 200, db: '' };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1];
  for (const k of ['sdk', 'repoctx', 'repo', 'out'])
    if (!a[k]) throw new Error(`missing --${k} (usage: see the comment at the top of this file)`);
  a.calls = Number(a.calls);
  return a;
}

function percentile(v, p) {
  const s = [...v].sort((x, y) => x - y);
  const i = Math.ceil(p * s.length);
  return s[Math.min(s.length - 1, Math.max(0, i - 1))];
}

const a = args();
const sdk = path.join(a.sdk, 'node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(pathToFileURL(path.join(sdk, 'client/index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(path.join(sdk, 'client/stdio.js')).href);

const serverArgs = ['mcp', a.repo, '--no-refresh', '--no-watch', '-q'];
if (a.db) serverArgs.push('--db', a.db);
const transport = new StdioClientTransport({ command: a.repoctx, args: serverArgs, stderr: 'inherit' });
const client = new Client({ name: 'repoctx-bench-serve', version: '1.0.0' });
await client.connect(transport);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === 'retrieve')) throw new Error('the server lists no retrieve tool');

const sym = await client.callTool({ name: 'symbols', arguments: { kind: 'function', limit: 500 } });
const names = sym.structuredContent.symbols.map((s) => s.qualname.replace(/[._]/g, ' '));
if (names.length === 0) throw new Error('the repository has no functions');
for (let i = 0; i < 10; ++i)  // warm-up
  await client.callTool({ name: 'retrieve', arguments: { query: names[i % names.length], k: 10 } });
const ms = [];
for (let i = 0; i < a.calls; ++i) {
  const t0 = performance.now();
  const r = await client.callTool({ name: 'retrieve', arguments: { query: names[i % names.length], k: 10 } });
  ms.push(performance.now() - t0);
  if (r.isError) throw new Error('retrieve failed: ' + JSON.stringify(r.content));
}
await client.close();
writeFileSync(a.out, JSON.stringify({
  calls: ms.length, p50_ms: percentile(ms, 0.5), p99_ms: percentile(ms, 0.99), min_ms: Math.min(...ms),
  tool: 'retrieve (sparse)', transport: 'stdio',
}) + '\n');
