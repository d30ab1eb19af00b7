#!/usr/bin/env python3
"""SWE-bench-style rows (instance_id, repo, base_commit, problem_statement, patch) from the SWE-bench dev
split as stored in the public repository yogendrahexo/swe-bench-dataset: 225 GitHub issues of six Python
repositories outside SWE-bench's twelve (pvlib, pydicom, sqlfluff, astroid, pyvista, marshmallow), each with
the patch that fixed it. The tune split of `repoctx train-locate`: issue text, not commit messages.

That copy keeps, per pull request, projects/<owner>__<name>/PR<n>/ with bug_description.txt (the issue, then
"Hints:", "Created at:", "Version:"), changes.patch (the fix) and buggy/<file name> (each changed file before
the fix), but not SWE-bench's base_commit. The base is recovered here from the repository's own history: the
newest commit before the issue's date (else, any commit that holds the first file's pre-fix blob) at which
every changed file is byte for byte its buggy/ copy, so the index is built from the exact text the fix
changed. Rows without such a commit (pyvista's repository exceeds the snapshot limit here) are left out and
counted on stderr. The maintainers' hints are not part of the request: they often name the fix.

usage: scripts/swe_dev_rows.py DATASET_GIT_DIR MIRRORS_DIR > swe-dev.jsonl
  DATASET_GIT_DIR  git dir of yogendrahexo/swe-bench-dataset (e.g. /work/.mirror/yogendrahexo+swe-bench-dataset/repo)
  MIRRORS_DIR      folder of clones as owner+name/repo (git dirs with full history)
"""
import hashlib
import json
import os
import re
import subprocess
import sys


def git(git_dir, *args):
    r = subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True)
    return r.stdout if r.returncode == 0 else None


def blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def parse_description(text):
    m = re.search(r"\nCreated at: (\S+)\nVersion: (.*)\n?$", text)
    created, body = (m.group(1), text[: m.start()]) if m else (None, text)
    body = body.split("\n\nHints:\n", 1)[0]
    return body.strip(), created


def find_base(repo_dir, want, created):
    """The first commit at which every (path, blob id) of `want` holds."""

    def holds(commit):
        for path, blob in want:
            got = git(repo_dir, "rev-parse", "-q", "--verify", f"{commit}:{path}")
            if got is None or got.decode().strip() != blob:
                return False
        return True

    before = git(repo_dir, "rev-list", "--all", f"--before={created}", "--max-count=400") if created else None
    for c in (before or b"").decode().split():
        if holds(c):
            return c
    log = git(repo_dir, "log", "--all", "--format=%H %ct", f"--find-object={want[0][1]}") or b""
    introduced = sorted((l.split() for l in log.decode().splitlines() if l.strip()), key=lambda x: int(x[1]))
    for c, _ in introduced:
        if holds(c):
            return c
    # The other files may reach their pre-fix state later: every commit from the first one's introduction on.
    if introduced:
        since = git(repo_dir, "rev-list", "--all", "--reverse", f"--since={introduced[0][1]}") or b""
        for c in since.decode().split()[:3000]:
            if holds(c):
                return c
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dataset, mirrors = sys.argv[1], sys.argv[2]
    listing = git(dataset, "ls-tree", "-r", "--name-only", "HEAD")
    if listing is None:
        sys.exit(f"{dataset} is not a git dir of yogendrahexo/swe-bench-dataset")
    prs = sorted({tuple(p.split("/")[1:3]) for p in listing.decode().splitlines()
                  if p.startswith("projects/") and p.endswith("/bug_description.txt")})
    kept = missing = 0
    for project, pr in prs:
        owner, name = project.split("__", 1)
        at = f"HEAD:projects/{project}/{pr}"
        request, created = parse_description(git(dataset, "show", f"{at}/bug_description.txt").decode("utf-8", "replace"))
        patch = git(dataset, "show", f"{at}/changes.patch").decode("utf-8", "replace")
        gold = [l.split()[2][2:] for l in patch.splitlines() if l.startswith("diff --git ")]
        want = []
        for path in gold:
            data = git(dataset, "show", f"{at}/buggy/{os.path.basename(path)}")
            if data is not None:
                want.append((path, blob_id(data)))
        repo_dir = os.path.join(mirrors, f"{owner}+{name}", "repo")
        base = find_base(repo_dir, want, created) if want and os.path.isdir(repo_dir) else None
        if base is None:
            missing += 1
            continue
        kept += 1
        print(json.dumps({"instance_id": f"{project}-{pr[2:]}", "repo": f"{owner}/{name}", "base_commit": base,
                          "created_at": created, "problem_statement": request, "patch": patch}))
    print(f"{kept} rows; {missing} left out (no clone or no commit holding the pre-fix files)", file=sys.stderr)


if __name__ == "__main__":
    main()
