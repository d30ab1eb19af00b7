// Node's own resolution of import specifiers: one JSON object {"file", "spec"} a line on stdin (file: an
// absolute path), one {"file", "spec", "resolved", "builtin", "error"} a line on stdout. `resolved` is the
// path Node's CommonJS resolver gives (require.resolve from that file: package.json main/exports with the
// "require" condition, extensions, index files, node_modules folders, the system's global folders), or null.
"use strict";
const { createRequire, builtinModules } = require("module");
const readline = require("readline");

const builtins = new Set(builtinModules);
const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (!line.trim()) return;
  const { file, spec } = JSON.parse(line);
  const out = { file, spec, resolved: null, builtin: false, error: null };
  if (spec.startsWith("node:") || builtins.has(spec)) {
    out.builtin = true;
  } else {
    try {
      out.resolved = createRequire(file).resolve(spec);
    } catch (e) {
      out.error = e.code || String(e);
    }
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
