#!/usr/bin/env python3
"""Every declared request parameter is accepted, validated and documented the same way on the four surfaces.

    parameter_surfaces.py --repoctx BIN --module-dir DIR --docs docs/PARAMETERS.md REPO

`repoctx parameters --json` lists the declarations (retrieve and localize, then the strategy parameters inside
`params`). For each request parameter:
- docs: docs/PARAMETERS.md equals `repoctx parameters --markdown` (the table is made from the declarations);
- CLI: the command's --help shows its spelling and its meaning; a valid value is accepted (exit 0);
- MCP: the tool's input schema has the property with the same type, meaning (except the model fields a
  server replaces by the names it loaded), range and choices; the procedural-only trace field is left out;
- HTTP and Python: a valid value is accepted;
and every bounded number just past its range, every string with choices given a value outside them, and
every field given a value of the wrong type, is refused by all four, naming the parameter.
Each strategy parameter (`params`, `--param NAME=VALUE`) is documented with its meaning and source, its
default is accepted by all four inside `params`, and a value past its range, outside its choices or of the
wrong type is refused by all four, naming it. The generation group (taken by generate, not retrieve) is checked
on generate's CLI, HTTP and Python surfaces the same way (MCP offers no generation): with no model configured a
valid value gets as far as asking for the LLM, a bad one is refused naming it before any model is needed.
"""
import argparse
import json
import os
import shutil
import sys

from _util import Checker, Failure, TempDir, main_wrapper, run, run_json
from mcp_stdio import Mcp, call
from serve_http import Server

# Fields a server fills from the models it loaded (never a client-named file): their schema says so instead.
SERVER_NAMED = {"structural_model", "model_file", "locate_model"}
# Valid values that keep a request cheap and well-formed (a completion cursor needs its file).
VALID = {"strategy": None, "target": None, "query": "register a url rule", "request": "register a url rule",
         "file": None, "params": {"imports_order": "bm25"}}


def valid_value(row, target, cursor_file):
    name, kind = row["name"], row["type"]
    if name == "target":
        return target
    if name == "file":
        return cursor_file
    if name in SERVER_NAMED:
        return "builtin"  # the built-in model, by the name every surface takes
    if name in VALID and VALID[name] is not None:
        return VALID[name]
    if "enum" in row:
        return row["default"] if "default" in row else row["enum"][0]
    if "default" in row:
        return row["default"]
    return {"string": "", "boolean": False, "integer": 1, "number": 1.0, "object": {}}[kind]


def invalid_values(row):
    """(value, what) pairs every surface must refuse."""
    out = []
    if "maximum" in row and row["maximum"] < 1e12:
        out.append((row["maximum"] + 1 if row["type"] == "integer" else row["maximum"] * 2 + 1, "past its maximum"))
    if "enum" in row:
        out.append(("no-such-choice", "outside its choices"))
    return out


def base_request(command, target):
    return {"query": "register a url rule"} if command == "retrieve" else {"request": "register a url rule"}


def cli_args(row, value):
    flag = row["cli"].split(",")[-1] if row["cli"] else ""
    longs = [s for s in row["cli"].split(",") if s.startswith("--")]
    flag = longs[0] if longs else flag
    if row["type"] == "boolean":
        return [flag] if value else []
    if row["type"] == "object":
        return [x for k, v in value.items() for x in (flag, f"{k}={v}")]
    return [flag, str(value)]


def body(a):
    ck = Checker()
    rows = run_json(a.repoctx, ["parameters", "--json"])
    all_params = [r for r in rows if r["command"] == "params"]
    strategy_rows = [r for r in all_params if r["group"] != "generation"]
    generation_rows = [r for r in all_params if r["group"] == "generation"]
    rows = [r for r in rows if r["command"] != "params"]
    ck.check(len(rows) >= 20 and {r["command"] for r in rows} == {"retrieve", "localize"},
             f"{len(rows)} declared parameters of retrieve and localize")
    names = [r["name"] for r in all_params]
    ck.check(len(names) >= 60 and len(set(names)) == len(names)
             and {r["group"] for r in strategy_rows} == {"retriever", "study", "completion", "procedural"}
             and {r["name"] for r in generation_rows} >= {"semantic_top", "baseline_top", "context_cut_chars"},
             f"{len(names)} strategy and generation parameters in five groups, each name once")
    md = run(a.repoctx, ["parameters", "--markdown"]).stdout
    ck.check(open(a.docs).read() == md, "docs/PARAMETERS.md is the table the declarations make "
             "(regenerate: repoctx parameters --markdown > docs/PARAMETERS.md)")
    for r in rows + strategy_rows:
        ck.check(f"`{r['name']}`" in md and r["description"] and r["description"].replace("|", "\\|") in md,
                 f"docs: {r['command']} {r['name']} documented with its meaning")
    for r in all_params:
        ck.check(bool(r["source"]) and r["source"] in md, f"docs: params {r['name']} says where its default comes from")

    sys.path.insert(0, a.module_dir)
    import repoctx as pyrepoctx

    with TempDir("repoctx-params-") as work:
        repo = os.path.join(work, "flask")
        shutil.copytree(a.repo, repo, ignore=shutil.ignore_patterns("__pycache__"))
        db = os.path.join(work, "index.db")
        run(a.repoctx, ["index", repo, "--db", db, "-q"])
        target, cursor_file = "helpers.py::get_root_path", "helpers.py"
        ix = pyrepoctx.Index(repo, db=db)
        srv = Server(a.repoctx, [repo], work, extra=["--db", db])
        mcp = Mcp(a.repoctx, repo, db)
        try:
            mcp.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"}}})
            mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            tools = {t["name"]: t for t in mcp.ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]}
            helps = {c: run(a.repoctx, [c, "--help"]).stdout for c in ("retrieve", "localize")}
            n = 10
            for r in rows:
                cmd, name = r["command"], r["name"]
                where = f"{cmd} {name}"
                # CLI: documented in --help (or its note says what the CLI has instead).
                if r["cli"]:
                    ck.check(r["cli"] in helps[cmd] and r["description"][:60] in " ".join(helps[cmd].split()),
                             f"CLI: {where} is `{r['cli']}` in --help with its meaning")
                else:
                    ck.check(bool(r.get("cli_note")), f"CLI: {where} is not an option and says why ({r.get('cli_note')})")
                # MCP: the same property.
                props = tools[cmd]["inputSchema"]["properties"]
                if name == "trace":
                    ck.check(name not in props, f"MCP: {where} left out (the tool returns its result only)")
                else:
                    p = props.get(name, {})
                    same = p.get("type") == r["type"] and p.get("minimum") == r.get("minimum") \
                        and p.get("maximum") == r.get("maximum") and p.get("default") == r.get("default")
                    if name not in SERVER_NAMED and name != "strategy":
                        same = same and p.get("description") == r["description"] and p.get("enum") == r.get("enum")
                    ck.check(same, f"MCP: {where} has the declared type, range, default and meaning",
                             json.dumps(p)[:300])
                # A valid value: accepted everywhere.
                value = valid_value(r, target, cursor_file)
                req = dict(base_request(cmd, target))
                if name == "file":
                    req = {"file": cursor_file, "line": 5}
                if name == "line" or name == "column":
                    req = {"file": cursor_file, "line": 5}
                req[name] = value if name != "line" else 5
                if cmd == "retrieve" and name in ("target", "file", "line", "column"):
                    req.pop("query", None)
                argv = [cmd, repo, "--db", db, "--no-refresh", "-q", "--json"]
                cli_ok = True
                if r["cli"]:
                    for k, v in req.items():
                        row = next(x for x in rows if x["command"] == cmd and x["name"] == k)
                        argv += cli_args(row, v)
                    p = run(a.repoctx, argv)
                    cli_ok = p.returncode == 0
                st, _, _ = srv.post(f"/v1/{cmd}", req)
                n += 1
                ans = mcp.ask(call(n, cmd, req))
                mcp_ok = name == "trace" or not ans.get("result", {}).get("isError")
                try:
                    getattr(ix, cmd)(**req)
                    py_ok = True
                except Exception as e:  # noqa: BLE001 - any refusal is the failure here
                    py_ok = str(e)
                ck.check(cli_ok and st == 200 and mcp_ok and py_ok is True,
                         f"{where}={json.dumps(value)}: accepted by CLI, HTTP, MCP and Python",
                         f"cli {cli_ok} http {st} mcp {json.dumps(ans)[:200]} python {py_ok}")
                # Invalid values: refused everywhere, naming the parameter.
                for bad, what in invalid_values(r) + [([1], "of the wrong type")]:
                    if r["type"] == "object" and what == "of the wrong type":
                        bad = "x"
                    req_bad = dict(base_request(cmd, target))
                    req_bad[name] = bad
                    refused = {}
                    if r["cli"] and what != "of the wrong type":
                        p = run(a.repoctx, [cmd, repo, "--db", db, "--no-refresh", "-q"] + cli_args(r, bad)
                                + cli_args(next(x for x in rows if x["command"] == cmd and x["name"] in ("query", "request")),
                                           "register a url rule"))
                        refused["cli"] = p.returncode == 2 and (r["cli"].split(",")[-1] in p.stderr
                                                                or any(s in p.stderr for s in r["cli"].split(",")))
                    st, j, _ = srv.post(f"/v1/{cmd}", req_bad)
                    refused["http"] = st == 400 and name in json.dumps(j)
                    n += 1
                    ans = mcp.ask(call(n, cmd, req_bad))
                    refused["mcp"] = bool(ans.get("result", {}).get("isError") or "error" in ans) \
                        and name in json.dumps(ans)
                    try:
                        getattr(ix, cmd)(**req_bad)
                        refused["python"] = False
                    except Exception as e:  # noqa: BLE001
                        refused["python"] = name in str(e)
                    ck.check(all(refused.values()), f"{where}={json.dumps(bad)} ({what}): refused naming it by "
                             + ", ".join(refused), json.dumps(refused))
            n = check_strategy_params(ck, a, strategy_rows, repo, db, srv, mcp, ix, n)
            procedural = [r for r in strategy_rows if r["name"] == "seed_threshold"]
            check_generation_params(ck, a, generation_rows + procedural, repo, db, srv, ix, target)
        finally:
            srv.stop()
            mcp.p.kill()
    return ck.finish("parameter_surfaces")


def param_text(v):
    return v if isinstance(v, str) else json.dumps(v)


def check_strategy_params(ck, a, strategy_rows, repo, db, srv, mcp, ix, n):
    """Every strategy parameter inside `params`: its default accepted, bad values refused naming it."""
    query = "register a url rule"
    for r in strategy_rows:
        name = r["name"]
        bads = invalid_values(r) + [([1], "of the wrong type")]
        for value, what in [(r["default"], None)] + bads:
            req = {"query": query, "params": {name: value}}
            p = run(a.repoctx, ["retrieve", repo, "--db", db, "--no-refresh", "-q", "--json", "--query", query,
                                "--param", f"{name}={param_text(value)}"])
            st, j, _ = srv.post("/v1/retrieve", req)
            n += 1
            ans = mcp.ask(call(n, "retrieve", req))
            mcp_error = bool(ans.get("result", {}).get("isError") or "error" in ans)
            try:
                ix.retrieve(**req)
                py = None
            except Exception as e:  # noqa: BLE001 - any refusal is the failure (or the expectation) here
                py = str(e)
            if what is None:
                ok = {"cli": p.returncode == 0, "http": st == 200, "mcp": not mcp_error, "python": py is None}
                ck.check(all(ok.values()), f"params {name}={json.dumps(value)} (its default): accepted by "
                         + ", ".join(ok), f"{json.dumps(ok)} cli: {p.stderr[-200:]} http: {json.dumps(j)[:200]} "
                         f"mcp: {json.dumps(ans)[:200]} python: {py}")
            else:
                ok = {"cli": p.returncode == 2 and name in p.stderr, "http": st == 400 and name in json.dumps(j),
                      "mcp": mcp_error and name in json.dumps(ans), "python": py is not None and name in py}
                ck.check(all(ok.values()), f"params {name}={json.dumps(value)} ({what}): refused naming it by "
                         + ", ".join(ok), f"{json.dumps(ok)} cli: {p.stderr[-200:]} http: {json.dumps(j)[:200]} "
                         f"mcp: {json.dumps(ans)[:200]} python: {py}")
    return n


def check_generation_params(ck, a, rows, repo, db, srv, ix, target):
    """generate's params: the generation group and the procedural one, on the CLI, HTTP and Python."""
    for r in rows:
        name = r["name"]
        for value, what in [(r["default"], None)] + invalid_values(r) + [([1], "of the wrong type")]:
            p = run(a.repoctx, ["generate", repo, "--db", db, "--no-refresh", "-q", "--target", target,
                                "--method", "sparse", "--param", f"{name}={param_text(value)}"])
            st, j, _ = srv.post("/v1/generate", {"target": target, "method": "sparse", "params": {name: value}})
            try:
                ix.generate(target=target, method="sparse", params={name: value})
                py = ""
            except Exception as e:  # noqa: BLE001 - every call fails here: no model is configured
                py = str(e)
            texts = {"cli": p.stderr, "http": json.dumps(j), "python": py}
            if what is None:
                ok = {k: "LLM" in t and f"'{name}'" not in t for k, t in texts.items()}
                ck.check(all(ok.values()), f"generate params {name}={json.dumps(value)} (its default): taken, then "
                         "the missing LLM is named, by " + ", ".join(ok), json.dumps(texts)[:600])
            else:
                ok = {k: name in t and "LLM" not in t for k, t in texts.items()}
                ok["cli"] = ok["cli"] and p.returncode == 2
                ok["http"] = ok["http"] and st == 400
                ck.check(all(ok.values()), f"generate params {name}={json.dumps(value)} ({what}): refused naming it "
                         "before any model by " + ", ".join(ok), json.dumps(texts)[:600])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    ap.add_argument("--module-dir", required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("repo")
    a = ap.parse_args()
    sys.exit(main_wrapper("parameter_surfaces", lambda: body(a)))


if __name__ == "__main__":
    main()
