#!/usr/bin/env python3
"""`repoctx evaluate` as a real Slurm array job: the test starts a single-node cluster (Debian's slurm-wlm and
munge: munged, slurmctld and slurmd on 127.0.0.1, everything in a temporary folder: key, configuration, state,
logs), submits scripts/scale/evaluate.sbatch (the script docs/SCALE.md ships) as an array of 3 tasks over a
small task file with the LLM-free gold and stub methods, waits for it, and checks that each array task ran the
shard its SLURM_ARRAY_TASK_ID names into <out>/shard-<i>-of-3 and that `repoctx table <out>` equals the table
of a local run of the same tasks. The sandbox runs inside the Slurm jobs as everywhere else.

Exits 77 (ctest: skipped) with the precise reason when the cluster cannot start here: slurm-wlm or munge not
installed, not root (slurmd must start jobs as their owner), or a daemon that fails to come up (its log's last
lines are printed). Once the cluster is up, every failure is a failure."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

from _util import REPO_ROOT, Checker, TempDir, main_wrapper, run_ok, tail

SKIP = 77
PY = "/usr/bin/python3"
SBATCH_SCRIPT = os.path.join(REPO_ROOT, "scripts", "scale", "evaluate.sbatch")


class Skip(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def log_tail(path, n=12):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


class Cluster:
    """munged + slurmctld + slurmd in the foreground as our children, configured in `root`."""

    def __init__(self, root):
        self.root, self.procs = root, []
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(root, d), mode=0o700)

    def _start(self, name, argv, log):
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(log, "ab"), env=self.env)
        self.procs.append((name, p, log))
        return p

    def _munge(self):
        key = os.path.join(self.root, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.socket = os.path.join(self.root, "munge", "munge.sock")
        log = os.path.join(self.root, "log", "munged.log")
        self._start("munged", ["munged", "-F", "--force", f"--key-file={key}", f"--socket={self.socket}",
                               f"--pid-file={self.root}/munge/munged.pid", f"--log-file={log}",
                               f"--seed-file={self.root}/munge/seed"], log)
        deadline = time.time() + 20
        while time.time() < deadline and not os.path.exists(self.socket):
            time.sleep(0.1)
        if not os.path.exists(self.socket):
            raise Skip("munged did not create its socket within 20 s: " + log_tail(log))

    def _config(self):
        host = socket.gethostname().split(".")[0]
        with open("/proc/meminfo") as f:
            mem_mb = int(f.readline().split()[1]) // 1024 * 9 // 10
        r = self.root
        conf = f"""ClusterName=repoctxtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
# no cgroup in a container: track processes by parentage, bind no tasks
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory={mem_mb} State=UNKNOWN
PartitionName=repoctx Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)

    def start(self):
        self._munge()
        self._config()
        self._start("slurmctld", ["slurmctld", "-D", "-f", self.conf], os.path.join(self.root, "log", "ctld.err"))
        time.sleep(1)
        self._start("slurmd", ["slurmd", "-D", "-f", self.conf], os.path.join(self.root, "log", "slurmd.err"))
        deadline = time.time() + 60
        state = ""
        while time.time() < deadline:
            for name, p, log in self.procs:
                if p.poll() is not None:
                    raise Skip(f"{name} exited with status {p.returncode}: {log_tail(log)}"
                               f"{log_tail(os.path.join(self.root, 'log', name + '.log'))}")
            q = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env)
            state = q.stdout.strip()
            if state.startswith("idle"):
                return
            time.sleep(0.5)
        raise Skip(f"the node did not become idle within 60 s (sinfo: {state!r}): "
                   f"{log_tail(os.path.join(self.root, 'log', 'slurmd.log'))}")

    def stop(self):
        for _, p, _ in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p, _ in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def prerequisites():
    missing = [p for p in ("munged", "slurmctld", "slurmd", "sbatch", "sinfo") if not shutil.which(p)]
    if missing:
        raise Skip(f"{', '.join(missing)} not found: install Debian's slurm-wlm and munge "
                   "(scripts/setup.sh --python-libs does)")
    if os.geteuid() != 0:
        raise Skip("not root: slurmd must run as root to start jobs as their owners")
    if not shutil.which("bwrap"):
        raise Skip("bubblewrap is not installed (the jobs' test runs need it)")


def write_tasks(path, repo):
    test = f"{PY} -m pytest -q -x -p no:cacheprovider colorama/tests/ansi_test.py"
    with open(path, "w") as f:
        for fn in ["code_to_chars", "AnsiCodes.__init__", "set_title"]:
            f.write(json.dumps({"repo": repo, "file": "colorama/ansi.py", "function": fn, "repo_id": "colorama",
                                "test_command": test}) + "\n")


def body(binary, work, cluster, ck):
    repo = os.path.join(work, "repo")
    shutil.copytree("/usr/lib/python3/dist-packages/colorama", os.path.join(repo, "colorama"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    tasks = os.path.join(work, "tasks.jsonl")
    write_tasks(tasks, repo)
    local = os.path.join(work, "local")
    want = run_ok(binary, ["evaluate", tasks, "--methods", "gold,stub", "--out", local, "-q"]).stdout
    run_ok(binary, ["index", repo, "-q"])  # as docs/SCALE.md says: index once, the shards only read it
    out = os.path.join(work, "out")
    env = dict(cluster.env, REPOCTX=binary, TASKS=tasks, OUT=out, METHODS="gold,stub", TIMEOUT="120")
    q = subprocess.run(["sbatch", "--wait", "--array=0-2", "--mem=256M", "--cpus-per-task=1", "--time=20",
                        f"--output={work}/job-%a.log", "--chdir", work, SBATCH_SCRIPT],
                       capture_output=True, text=True, env=env, timeout=600)
    logs = {i: log_tail(os.path.join(work, f"job-{i}.log"), 40) for i in range(3)}
    ck.check(q.returncode == 0, "sbatch --wait --array=0-2 scripts/scale/evaluate.sbatch: every array task exits 0",
             q.stdout + q.stderr + json.dumps(logs, indent=1))
    for i in range(3):
        ck.check(f"shard {i}/3 from SLURM_ARRAY_TASK_ID={i} of SLURM_ARRAY_TASK_COUNT=3" in logs[i],
                 f"array task {i} runs shard {i}/3 (from Slurm's variables)", logs[i])
    ck.check(sorted(os.listdir(out)) == [f"shard-{i}-of-3" for i in range(3)], "one results folder per shard",
             str(os.listdir(out) if os.path.isdir(out) else "no output folder"))
    counts = []
    for i in range(3):
        p = os.path.join(out, f"shard-{i}-of-3", "results.jsonl")
        with open(p) if os.path.exists(p) else open(os.devnull) as f:
            counts.append(sum(1 for line in f if line.strip()))
    ck.check(counts == [2, 2, 2], "each shard ran its task with gold and stub", str(counts))
    got = run_ok(binary, ["table", out]).stdout
    ck.check(got == want, "`repoctx table <out>` over the array's shards == the table of a local run", got + "\n" + want)
    print(got)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repoctx", required=True)
    a = ap.parse_args()
    binary = os.path.abspath(a.repoctx)
    ck = Checker()
    try:
        prerequisites()
    except Skip as e:
        print(f"SKIPPED: {e}")
        return SKIP
    with TempDir("repoctx-slurm-") as work:
        os.chmod(work, 0o755)
        cluster = Cluster(os.path.join(work, "cluster"))
        try:
            cluster.start()
        except Skip as e:
            cluster.stop()
            print(f"SKIPPED: the single-node Slurm cluster did not start: {e}")
            return SKIP
        try:
            print("  single-node Slurm cluster up (munged, slurmctld, slurmd on 127.0.0.1)")
            body(binary, work, cluster, ck)
        finally:
            cluster.stop()
    return ck.finish("slurm_array")


if __name__ == "__main__":
    sys.exit(main_wrapper("slurm_array", main))
