#!/usr/bin/env python3
"""One scheduled run in each store, in the same hyperfine run: `baton run J`
of a job that runs `true`, with the embedded store (lock file + SQLite) and
with `[store] url` on a throwaway PostgreSQL 15 cluster on this machine (TCP
on 127.0.0.1, fsync off), against the floor `psql -c 'SELECT 1'` (one
connection, one round trip, process start included). Prints the medians and
the ratios.

Usage: scripts/bench-store.py [--runs N]
Needs hyperfine and Debian's postgresql; run as root (the server runs as
the postgres user) or as a user who may run initdb. Builds the release
binary first.
"""
import argparse, glob, json, os, shutil, socket, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=100)
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "-q", "-p", "baton"], cwd=root, check=True)
baton = os.path.join(root, "target/release/baton")
pgbin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
work = tempfile.mkdtemp(prefix="bench-store-")
os.chmod(work, 0o755)
asroot = os.geteuid() == 0


def pg(*cmd):
    full = [os.path.join(pgbin, cmd[0]), *cmd[1:]]
    if asroot:
        full = ["runuser", "-u", "postgres", "--", *full]
    subprocess.run(full, check=True, stdout=subprocess.DEVNULL)


s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
data = os.path.join(work, "pg")
os.mkdir(data)
if asroot:
    shutil.chown(data, "postgres")
pg("initdb", "-D", data + "/data", "-U", "baton", "--auth=trust", "--no-sync")
pg("pg_ctl", "-D", data + "/data", "-l", data + "/log", "-w", "-o",
   f"-k {data} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
url = f"postgres://baton@127.0.0.1:{port}/postgres"
try:
    configs = {}
    for name, store in [("files", ""), ("postgres", f'[store]\nurl = "{url}"\n')]:
        path = os.path.join(work, f"{name}.toml")
        with open(path, "w") as f:
            f.write(f'[scheduler]\nstate_dir = "{work}/state-{name}"\ntimezone = "UTC"\n'
                    f'{store}[jobs.j]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n')
        configs[name] = path
    subprocess.run([baton, "store", "migrate", "--config", configs["postgres"]], check=True,
                   stdout=subprocess.DEVNULL)
    out = os.path.join(work, "runs.json")
    psql = os.path.join(pgbin, "psql")
    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(a.runs),
                    "--export-json", out,
                    "-n", "files", f"{baton} run j --config {configs['files']}",
                    "-n", "postgres", f"{baton} run j --config {configs['postgres']}",
                    "-n", "psql SELECT 1", f"{psql} -X -q -d {url} -c 'SELECT 1'"],
                   check=True, stdout=subprocess.DEVNULL)
    r = {x["command"]: x for x in json.load(open(out))["results"]}
    files, pgr, floor = (r[k]["median"] * 1000 for k in ("files", "postgres", "psql SELECT 1"))
    print("| measurement (hyperfine median) | time |")
    print("| --- | ---: |")
    print(f"| `baton run j`, files (lock file + SQLite) | {files:.1f} ms |")
    print(f"| `baton run j`, PostgreSQL store | {pgr:.1f} ms |")
    print(f"| `psql -c 'SELECT 1'` (floor: a process, a connection, a round trip) | {floor:.1f} ms |")
    print(f"\nPostgreSQL / files = {pgr / files:.2f}x; PostgreSQL / psql floor = {pgr / floor:.2f}x")
finally:
    pg("pg_ctl", "-D", data + "/data", "-m", "immediate", "stop")
    shutil.rmtree(work, ignore_errors=True)
