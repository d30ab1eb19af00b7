#!/usr/bin/env node
// The TypeScript compiler's parser as the oracle for repoctx's JavaScript and TypeScript extraction.
//
//   node ts_entities.js ROOT --out FILE.jsonl
//
// One JSON object per .js/.jsx/.mjs/.cjs/.ts/.tsx/.mts/.cts file under ROOT (node_modules skipped), in the
// format of ast_entities.py: {"file", "ok", "error", "entities": [[qualname, kind, start, end], ...]}.
// repoctx's contract for the two languages:
//   - top-level function declarations and overload signatures ("function"), and top-level variables whose
//     initialiser is an arrow function or a function expression ("function"); other top-level variables
//     with a plain name ("variable");
//   - top-level `a.b.c = function/arrow` statements ("function", qualname "a.b.c");
//   - classes ("class") with their methods and accessors ("method", "C.m"), constructors ("constructor")
//     and properties ("field"), named by an identifier or a #private name (computed and literal names are
//     left out); interfaces ("interface") with method signatures and accessors ("method") and property
//     signatures ("field"); type
//     aliases and enums ("class");
//   - `export`, `declare` and `export default` wrap a declaration: it starts at the wrapper; decorators are
//     part of what they decorate; namespaces are not entered;
//   - lines: the first line of the node's first token (comments before it excluded), the line of its last
//     character; a variable runs from its statement's start to the end of its declarator.
// The TypeScript compiler comes from Debian (node-typescript), the file's syntax errors from its parse
// diagnostics.
"use strict";
const fs = require("fs");
const path = require("path");
// Debian's node-typescript lives in /usr/share/nodejs, which a node from elsewhere does not search.
const ts = (() => {
  try {
    return require("typescript");
  } catch (e) {
    return require("/usr/share/nodejs/typescript");
  }
})();

const EXTENSIONS = [".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"];

function scriptKind(file) {
  if (file.endsWith(".tsx")) return ts.ScriptKind.TSX;
  if (file.endsWith(".jsx")) return ts.ScriptKind.JSX;
  if (/\.[mc]?ts$/.test(file)) return ts.ScriptKind.TS;
  return ts.ScriptKind.JS;
}

function walk(dir, out) {
  for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, ent.name);
    if (ent.isDirectory()) {
      if (ent.name !== "node_modules") walk(p, out);
    } else if (ent.isFile() && EXTENSIONS.some((e) => ent.name.endsWith(e))) {
      out.push(p);
    }
  }
  return out;
}

function isFunctionValue(e) {
  while (e && ts.isParenthesizedExpression(e)) e = e.expression;
  return !!e && (ts.isArrowFunction(e) || ts.isFunctionExpression(e));
}

// "a.b.c" for a property-access chain of plain identifiers, else null.
function plainChain(e) {
  const parts = [];
  while (ts.isPropertyAccessExpression(e)) {
    if (!ts.isIdentifier(e.name)) return null;
    parts.unshift(e.name.text);
    e = e.expression;
  }
  if (!ts.isIdentifier(e)) return null;
  parts.unshift(e.text);
  return parts.join(".");
}

function memberName(name) {
  if (!name) return null;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  return null;
}

function entities(sf) {
  const out = [];
  const line = (pos) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const add = (q, kind, startNode, endNode) =>
    out.push([q, kind, line(startNode.getStart(sf)), line(Math.max(endNode.getStart(sf), endNode.end - 1))]);

  function classMembers(c, prefix) {
    for (const m of c.members) {
      const name = memberName(m.name);
      if (ts.isConstructorDeclaration(m)) add(prefix + "constructor", "constructor", m, m);
      else if (!name) continue;
      else if (ts.isMethodDeclaration(m) || ts.isGetAccessor(m) || ts.isSetAccessor(m)) add(prefix + name, "method", m, m);
      else if (ts.isPropertyDeclaration(m)) add(prefix + name, "field", m, m);
    }
  }

  for (const st of sf.statements) {
    if (ts.isFunctionDeclaration(st)) {
      if (st.name) add(st.name.text, "function", st, st);
    } else if (ts.isClassDeclaration(st)) {
      if (!st.name) continue;
      add(st.name.text, "class", st, st);
      classMembers(st, st.name.text + ".");
    } else if (ts.isInterfaceDeclaration(st)) {
      add(st.name.text, "interface", st, st);
      for (const m of st.members) {
        const name = memberName(m.name);
        if (!name) continue;
        if (ts.isMethodSignature(m) || ts.isGetAccessor(m) || ts.isSetAccessor(m))
          add(st.name.text + "." + name, "method", m, m);
        else if (ts.isPropertySignature(m)) add(st.name.text + "." + name, "field", m, m);
      }
    } else if (ts.isTypeAliasDeclaration(st) || ts.isEnumDeclaration(st)) {
      add(st.name.text, "class", st, st);
    } else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        if (!ts.isIdentifier(d.name)) continue;
        const init = d.initializer;
        if (init && ts.isCallExpression(init) && ts.isIdentifier(init.expression) && init.expression.text === "require" &&
            init.arguments.length === 1 && ts.isStringLiteral(init.arguments[0]))
          continue;  // an import
        add(d.name.text, isFunctionValue(d.initializer) ? "function" : "variable", st, d);
      }
    } else if (ts.isExpressionStatement(st) && ts.isBinaryExpression(st.expression) &&
               st.expression.operatorToken.kind === ts.SyntaxKind.EqualsToken &&
               ts.isPropertyAccessExpression(st.expression.left) && isFunctionValue(st.expression.right)) {
      const chain = plainChain(st.expression.left);
      if (chain) add(chain, "function", st, st);
    }
  }
  return out;
}

function main() {
  const args = process.argv.slice(2);
  let outPath = null;
  const roots = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--out") outPath = args[++i];
    else roots.push(args[i]);
  }
  if (roots.length !== 1) {
    process.stderr.write("usage: ts_entities.js ROOT [--out FILE]\n");
    process.exit(2);
  }
  const root = roots[0];
  const files = walk(root, []).sort();
  const lines = [];
  for (const file of files) {
    const rel = path.relative(root, file).split(path.sep).join("/");
    const rec = { file: rel, ok: false, entities: [] };
    const text = fs.readFileSync(file, "utf8");
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
    if (sf.parseDiagnostics.length > 0) {
      rec.error = ts.flattenDiagnosticMessageText(sf.parseDiagnostics[0].messageText, "\n");
    } else {
      rec.ok = true;
      rec.entities = entities(sf);
    }
    lines.push(JSON.stringify(rec));
  }
  const data = lines.join("\n") + (lines.length ? "\n" : "");
  if (outPath) fs.writeFileSync(outPath, data);
  else process.stdout.write(data);
}

main();
