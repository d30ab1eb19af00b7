#!/usr/bin/env python3
"""Indexing survives a crash (SIGKILL) and an interrupt (SIGINT) mid-way.

    crash_safety.py --repoctx BIN REPO [--kill-after 200] [--group-kills 3] [--report FILE]

(a) `REPOCTX_DEBUG_KILL_AFTER_FILES=200 repoctx index REPO --db FRESH` dies by SIGKILL right after
    a commit; (b) the killed index passes `PRAGMA integrity_check`, says complete = '0', and every
    file it holds is whole (its entity, snippet, import and reference counts are those of a clean
    full index); (c) `repoctx index` on the killed index exits 0, parses exactly the files that had
    not been committed and finds the committed ones unchanged; (d) the resumed index lists the same
    symbols as the clean one; (e) SIGINT while indexing: exit 130, complete = '0', the next run
    completes and lists the same symbols; (f) `kill -9` of the whole process group at a random moment of
    `index` (a fresh index, or `--force` over a complete one), GROUP_KILLS times: each time the index passes
    integrity_check, every file it holds is whole, and the next run completes it to the clean index
    (docs/RELIABILITY.md reports 20 tries: --group-kills 20 --report FILE).
"""
import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

from _util import (Checker, Failure, TempDir, cmdline, main_wrapper, run, run_json, run_ok,
                   tail, wait_for_binary)

BATCH = 64


def ro_connect(db):
    """Read-only connection (the index must not be modified by the check)."""
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def meta(conn, key):
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def per_file_counts(conn):
    """path -> (hash, entities, snippets, imports, refs rows, refs count)."""
    out = {}
    q = """SELECT f.path, f.hash,
                  (SELECT COUNT(*) FROM entities e WHERE e.file_id = f.id),
                  (SELECT COUNT(*) FROM snippets s WHERE s.file_id = f.id),
                  (SELECT COUNT(*) FROM imports i WHERE i.file_id = f.id),
                  (SELECT COUNT(*) FROM refs r WHERE r.file_id = f.id),
                  (SELECT COALESCE(SUM(r.count), 0) FROM refs r WHERE r.file_id = f.id)
           FROM files f"""
    for row in conn.execute(q):
        out[row[0]] = row[1:]
    return out


def symbols_lines(binary, repo, db):
    p = run_ok(binary, ["symbols", repo, "--db", db, "--jsonl", "--no-refresh"])
    return sorted(line for line in p.stdout.splitlines() if line.strip())


def compare_symbols(ck, what, got, want):
    if got == want:
        ck.check(True, f"{what}: symbols identical to the clean index ({len(want)} entities)")
        return
    gs, ws = set(got), set(want)
    extra, missing = sorted(gs - ws), sorted(ws - gs)
    ck.fail(f"{what}: symbols identical to the clean index",
            f"{len(got)} vs {len(want)} lines; {len(missing)} missing, e.g. "
            f"{missing[:2]}; {len(extra)} extra, e.g. {extra[:2]}")


def group_kills(ck, binary, repo, tmp, tries, clean_counts, clean_seconds, report):
    """(f): SIGKILL to the process group of `index` at a random moment, then check and resume."""
    rng = random.Random(2021)
    complete_db = os.path.join(tmp, "complete.db")
    run_ok(binary, ["index", repo, "--db", complete_db, "-q"])
    killed_mid_run, differing, inconsistent, resumed_bad = 0, 0, 0, 0
    for k in range(tries):
        db = os.path.join(tmp, f"group-kill-{k}.db")
        force = k % 2 == 1
        if force:      # rows replaced under a complete index
            for suf in ("", "-wal", "-shm"):
                if os.path.exists(complete_db + suf):
                    shutil.copy(complete_db + suf, db + suf)
        argv = [binary, "index", repo, "--db", db, "-q"] + (["--force"] if force else [])
        delay = rng.uniform(0.05, max(0.1, clean_seconds * 0.95))
        wait_for_binary(binary)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed_mid_run += 1
        proc.wait()
        bad = []
        if os.path.exists(db):
            with ro_connect(db) as c:
                integrity = [r[0] for r in c.execute("PRAGMA integrity_check")]
                got = per_file_counts(c)
        else:          # killed before the index existed: nothing to check
            integrity, got = ["ok (no index yet)"], {}
        if not integrity[0].startswith("ok"):
            inconsistent += 1
        for path, counts in got.items():
            if clean_counts.get(path) != counts:
                bad.append(path)
        differing += len(bad)
        p = run(binary, ["index", repo, "--db", db, "--json", "-q"])
        with ro_connect(db) as c:
            resumed = per_file_counts(c)
        if p.returncode != 0 or resumed != clean_counts:
            resumed_bad += 1
        print(f"  try {k + 1}: {'--force, ' if force else ''}killed after {delay:.2f} s, {len(got)} files held, "
              f"integrity {integrity[0]}, {len(bad)} differing, resumed "
              f"{'to the clean index' if resumed == clean_counts else 'WRONG'}", flush=True)
        for suf in ("", "-wal", "-shm"):
            if os.path.exists(db + suf):
                os.remove(db + suf)
    ck.check(inconsistent == 0, f"(f) {tries} process-group kills: integrity_check ok after each")
    ck.check(differing == 0, f"(f) {tries} process-group kills: 0 files differing from the clean index",
             f"{differing} files differ")
    ck.check(resumed_bad == 0, f"(f) {tries} process-group kills: the next run completes the clean index each time",
             f"{resumed_bad} resumed runs differ")
    if report:
        with open(report, "w") as f:
            json.dump({"tries": tries, "killed_mid_run": killed_mid_run, "files_differing": differing,
                       "integrity_failures": inconsistent, "resume_failures": resumed_bad}, f, indent=2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repoctx", required=True, help="path to the repoctx binary")
    ap.add_argument("repo")
    ap.add_argument("--kill-after", type=int, default=200, metavar="N")
    ap.add_argument("--group-kills", type=int, default=3, metavar="TRIES")
    ap.add_argument("--report", help="(f)'s counts as JSON")
    args = ap.parse_args()
    binary, repo = os.path.abspath(args.repoctx), os.path.abspath(args.repo)
    if not os.path.isdir(repo):
        raise Failure(f"not a directory: {repo}")
    ck = Checker()

    with TempDir("repoctx-crash-") as tmp:
        clean_db = os.path.join(tmp, "clean.db")
        killed_db = os.path.join(tmp, "killed.db")
        int_db = os.path.join(tmp, "interrupted.db")

        print(f"clean full index of {repo}", flush=True)
        t_clean = time.time()
        clean = run_json(binary, ["index", repo, "--db", clean_db, "--json", "-q"])
        clean_seconds = time.time() - t_clean
        ck.check(clean.get("complete") is True, f"clean index complete ({clean['files']} files, "
                                                f"{clean['entities']} entities)")
        with ro_connect(clean_db) as c:
            clean_counts = per_file_counts(c)
        clean_symbols = symbols_lines(binary, repo, clean_db)
        total = len(clean_counts)
        if total <= args.kill_after + BATCH:
            raise Failure(f"{repo} has {total} indexed files; need more than "
                          f"{args.kill_after + BATCH} for the kill to happen mid-way")

        # (a) SIGKILL right after the commit that reaches N files
        print(f"\n(a) index with REPOCTX_DEBUG_KILL_AFTER_FILES={args.kill_after}", flush=True)
        p = run(binary, ["index", repo, "--db", killed_db, "-q"],
                env={"REPOCTX_DEBUG_KILL_AFTER_FILES": str(args.kill_after)})
        ck.check(p.returncode == -signal.SIGKILL, "the process died by SIGKILL (returncode -9)",
                 f"returncode {p.returncode}; stderr: {tail(p.stderr, 500)}")
        if not os.path.exists(killed_db):
            raise Failure(f"no index file at {killed_db} after the kill")

        # (b) the killed index is consistent, and every file in it is whole
        print("\n(b) the killed index", flush=True)
        with ro_connect(killed_db) as c:
            integrity = [r[0] for r in c.execute("PRAGMA integrity_check")]
            ck.check(integrity == ["ok"], "PRAGMA integrity_check is ok", str(integrity[:5]))
            ck.check(meta(c, "complete") == "0", "meta complete = '0'",
                     f"complete = {meta(c, 'complete')!r}")
            killed_counts = per_file_counts(c)
        committed = len(killed_counts)
        expect = -(-args.kill_after // BATCH) * BATCH   # the first batch boundary >= N
        ck.check(committed == expect,
                 f"{committed} files committed before the kill (batches of {BATCH}: expected "
                 f"{expect})")
        bad = []
        for path, got in sorted(killed_counts.items()):
            want = clean_counts.get(path)
            if want != got:
                bad.append(f"{path}: killed index (hash, entities, snippets, imports, refs rows, "
                           f"refs) {got} vs clean {want}")
        ck.check(not bad, f"every committed file is whole ({committed} files: entities, snippets, "
                          "imports, references as in the clean index)",
                 f"{len(bad)} differ, e.g. {bad[:3]}")
        with ro_connect(killed_db) as c:
            orphans = c.execute("SELECT COUNT(*) FROM entities WHERE file_id NOT IN "
                                "(SELECT id FROM files)").fetchone()[0]
            orphans += c.execute("SELECT COUNT(*) FROM snippets WHERE file_id NOT IN "
                                 "(SELECT id FROM files)").fetchone()[0]
        ck.check(orphans == 0, "no entity or snippet rows without their file", f"{orphans} rows")

        # (c) resume
        print("\n(c) re-run index on the killed index", flush=True)
        args_c = ["index", repo, "--db", killed_db, "--json", "-q"]
        p = run(binary, args_c)
        if ck.check(p.returncode == 0, f"`{cmdline(binary, args_c)}` exits 0",
                    f"exit {p.returncode}: {tail(p.stderr, 800)}"):
            rep = json.loads(p.stdout)
            print(f"  report: files={rep.get('files')} parsed={rep.get('parsed')} "
                  f"unchanged={rep.get('unchanged')} touched={rep.get('touched')} "
                  f"removed={rep.get('removed')} complete={rep.get('complete')}")
            ck.check(rep.get("parsed") == total - committed,
                     f"parsed = {total - committed} (the files not committed before the kill)",
                     f"parsed = {rep.get('parsed')}")
            ck.check(rep.get("unchanged") == committed,
                     f"unchanged = {committed} (the files committed before the kill)",
                     f"unchanged = {rep.get('unchanged')}")
            ck.check(rep.get("complete") is True, "complete = true", f"{rep.get('complete')!r}")
        with ro_connect(killed_db) as c:
            ck.check(meta(c, "complete") == "1", "meta complete = '1' after the resumed run",
                     f"complete = {meta(c, 'complete')!r}")
            ck.check(per_file_counts(c) == clean_counts,
                     "resumed index: per-file counts equal the clean index's")

        # (d) same symbols as the clean index
        print("\n(d) symbols of the resumed index", flush=True)
        compare_symbols(ck, "resumed index", symbols_lines(binary, repo, killed_db), clean_symbols)

        # (e) SIGINT mid-way
        print("\n(e) SIGINT while indexing", flush=True)
        wait_for_binary(binary)
        proc = subprocess.Popen([binary, "index", repo, "--db", int_db, "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rows, t0 = 0, time.time()
        while proc.poll() is None and time.time() - t0 < 300:
            try:
                with ro_connect(int_db) as c:
                    rows = c.execute("SELECT COUNT(*) FROM files").fetchone()[0]
            except sqlite3.Error:
                rows = 0          # not created yet, or its schema not yet committed
            if rows > 0:
                break
            time.sleep(0.02)
        if proc.poll() is not None:
            out, err = proc.communicate()
            ck.fail("SIGINT sent while indexing",
                    f"the index finished (exit {proc.returncode}) before any files row was seen: "
                    f"{tail(err, 500)}")
        else:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                ck.fail("the process exits within 120 s of SIGINT")
            print(f"  SIGINT sent with {rows} files rows committed")
            ck.check(proc.returncode == 130, "exit code 130 after SIGINT",
                     f"returncode {proc.returncode}; stderr: {tail(err, 500)}")
            if err.strip():
                print("  stderr: " + " | ".join(err.strip().splitlines()[-3:]))
            with ro_connect(int_db) as c:
                integrity = [r[0] for r in c.execute("PRAGMA integrity_check")]
                ck.check(integrity == ["ok"], "interrupted index: PRAGMA integrity_check is ok",
                         str(integrity[:5]))
                ck.check(meta(c, "complete") == "0", "interrupted index: meta complete = '0'",
                         f"complete = {meta(c, 'complete')!r}")
                n_int = c.execute("SELECT COUNT(*) FROM files").fetchone()[0]
                int_counts = per_file_counts(c)
            ck.check(0 < n_int < total,
                     f"interrupted index holds part of the files ({n_int} of {total})")
            bad = [p for p, got in int_counts.items() if clean_counts.get(p) != got]
            ck.check(not bad, "interrupted index: every committed file is whole",
                     f"{len(bad)} differ, e.g. {bad[:3]}")
            args_e = ["index", repo, "--db", int_db, "--json", "-q"]
            p = run(binary, args_e)
            if ck.check(p.returncode == 0, f"next run `{cmdline(binary, args_e)}` exits 0",
                        f"exit {p.returncode}: {tail(p.stderr, 800)}"):
                rep = json.loads(p.stdout)
                print(f"  report: parsed={rep.get('parsed')} unchanged={rep.get('unchanged')} "
                      f"complete={rep.get('complete')}")
                ck.check(rep.get("complete") is True, "next run: complete = true")
                ck.check(rep.get("unchanged") == n_int and rep.get("parsed") == total - n_int,
                         f"next run: unchanged = {n_int}, parsed = {total - n_int}",
                         f"unchanged = {rep.get('unchanged')}, parsed = {rep.get('parsed')}")
            compare_symbols(ck, "index completed after SIGINT",
                            symbols_lines(binary, repo, int_db), clean_symbols)

        print(f"\n(f) kill -9 of the process group during `index`, {args.group_kills} times", flush=True)
        group_kills(ck, binary, repo, tmp, args.group_kills, clean_counts, clean_seconds, args.report)
    return ck.finish("crash_safety")


if __name__ == "__main__":
    sys.exit(main_wrapper("crash_safety", main))
