// `repoctx mcp` driven by the official MCP client SDK (@modelcontextprotocol/sdk, pinned in
// scripts/deps.lock, installed by scripts/setup.sh under ~/.cache/repoctx/node): the SDK's own handshake,
// version negotiation, schema checks of tools/list and of every result.
//
//   node tests/integration/mcp_sdk.mjs --sdk DIR --repoctx BIN --repo REPO
//
// Exits 0 when every check passes, 1 otherwise (each check printed).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';

const a = {};
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1];
for (const k of ['sdk', 'repoctx', 'repo']) {
  if (!a[k]) { console.error(`missing --${k}`); process.exit(2); }
}
const sdk = path.join(a.sdk, 'node_modules/@modelcontextprotocol/sdk/dist/esm');
const { Client } = await import(pathToFileURL(path.join(sdk, 'client/index.js')).href);
const { StdioClientTransport } = await import(pathToFileURL(path.join(sdk, 'client/stdio.js')).href);
const { LATEST_PROTOCOL_VERSION, McpError } = await import(pathToFileURL(path.join(sdk, 'types.js')).href);

let failed = 0, passed = 0;
function check(cond, what, detail = '') {
  if (cond) { passed++; console.log(`  ok    ${what}`); }
  else { failed++; console.log(`  FAIL  ${what}${detail ? '\n        ' + detail : ''}`); }
}

const work = mkdtempSync(path.join(os.tmpdir(), 'repoctx-mcp-sdk-'));
try {
  const db = path.join(work, 'index.db');
  execFileSync(a.repoctx, ['index', a.repo, '--db', db, '-q']);
  const transport = new StdioClientTransport({
    command: a.repoctx, args: ['mcp', a.repo, '--db', db, '--no-refresh', '-q'], stderr: 'inherit',
  });
  let negotiated;
  transport.setProtocolVersion = (v) => { negotiated = v; };  // the client reports the version it agreed on
  const client = new Client({ name: 'repoctx-test', version: '1.0.0' });
  await client.connect(transport);  // initialize + notifications/initialized, validated by the SDK
  check(client.getServerVersion()?.name === 'repoctx', 'initialize: server info');
  check(negotiated === LATEST_PROTOCOL_VERSION, `negotiated the SDK's latest protocol (${LATEST_PROTOCOL_VERSION})`,
        String(negotiated));
  check(client.getServerCapabilities()?.tools !== undefined, 'the server declares tools');
  await client.ping();
  check(true, 'ping');

  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  for (const name of ['retrieve', 'symbols', 'read_file', 'grep', 'refresh'])
    check(byName[name]?.inputSchema?.type === 'object', `tools/list: ${name} with an object input schema`);
  const strategies = byName.retrieve.inputSchema.properties.strategy.enum;
  check(strategies.includes('sparse') && strategies.includes('structural') && !strategies.includes('procedural'),
        'retrieve lists the strategies runnable without a model', JSON.stringify(strategies));
  check(JSON.stringify(byName.read_file.inputSchema.required) === '["path"]', 'read_file requires path');

  let r = await client.callTool({ name: 'retrieve', arguments: { query: 'register a url rule', k: 5 } });
  const hits = r.structuredContent?.results ?? [];
  check(!r.isError && hits.length === 5 && hits.every((h) => h.target.includes('::')),
        'retrieve (query): 5 hits naming functions', JSON.stringify(r).slice(0, 300));
  check(r.content[0].type === 'text' && r.content[0].text.includes(hits[0].file), 'retrieve: a text rendering');
  r = await client.callTool({ name: 'retrieve',
                              arguments: { target: 'helpers.py::get_root_path', strategy: 'structural', k: 3 } });
  check(!r.isError && r.structuredContent.target === 'helpers.py::get_root_path' &&
        r.structuredContent.results.length === 3, 'retrieve (target, structural)', JSON.stringify(r).slice(0, 300));
  r = await client.callTool({ name: 'symbols', arguments: { name: 'get_root_path' } });
  check(!r.isError && r.structuredContent.symbols.some((s) => s.target === 'helpers.py::get_root_path'), 'symbols');
  r = await client.callTool({ name: 'read_file', arguments: { path: 'helpers.py', start_line: 1, end_line: 3 } });
  check(!r.isError && r.content[0].text.startsWith('helpers.py (lines 1-3'), 'read_file', JSON.stringify(r).slice(0, 200));
  r = await client.callTool({ name: 'grep', arguments: { pattern: 'def get_root_path', fixed: true } });
  check(!r.isError && r.content[0].text.includes('helpers.py:'), 'grep');
  r = await client.callTool({ name: 'read_file', arguments: { path: '/etc/passwd' } });
  check(r.isError === true && r.content[0].text.includes('outside the repository'), 'read_file outside: isError');
  r = await client.callTool({ name: 'refresh', arguments: {} });
  check(!r.isError && r.structuredContent.complete === true, 'refresh');
  try {
    await client.callTool({ name: 'no_such_tool', arguments: {} });
    check(false, 'an unknown tool is a protocol error');
  } catch (e) {
    check(e instanceof McpError && e.code === -32602, 'an unknown tool is a protocol error (-32602)', String(e));
  }
  await client.close();
} catch (e) {
  check(false, 'no exception', e?.stack ?? String(e));
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(`\nmcp_sdk: ${failed ? 'FAILED' : 'OK'} (${passed} passed, ${failed} failed)`);
process.exit(failed ? 1 : 0);
