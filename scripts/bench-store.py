#!/usr/bin/env python3
"""One scheduled run in each store, in the same hyperfine run: `baton run J`
of a job that runs `true`, with the embedded store (lock file + SQLite) and
with `[store] url` on a throwaway PostgreSQL 15 cluster on this machine (TCP
on 127.0.0.1, fsync off), against the floor `psql -c 'SELECT 1'` (one
connection, one round trip, process start included). Prints the medians and
the ratios.

Then counts what each command costs the store, through a proxy between
baton and the server: connections and round trips (a round trip is the
client speaking after the server, or first) of `baton run j`, of `baton
tick` with nothing due and of `baton status` with 10 jobs; and times a run
and the floor again with the proxy delaying every round trip by 20 ms, as a
server across a network would.

Usage: scripts/bench-store.py [--runs N] [--baton PATH]
Needs hyperfine and Debian's postgresql; run as root (the server runs as
the postgres user) or as a user who may run initdb. Builds the release
binary first.
"""
import argparse, json, os, shutil, socket, subprocess, tempfile, threading, time

import throwaway_pg

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=100)
ap.add_argument("--baton", help="the binary to measure (default: build the release binary)")
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if a.baton:
    baton = os.path.abspath(a.baton)
else:
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "baton"], cwd=root, check=True)
    baton = os.path.join(root, "target/release/baton")
work = tempfile.mkdtemp(prefix="bench-store-")
os.chmod(work, 0o755)
cluster = throwaway_pg.Cluster(work).start()
port, url, pgbin = cluster.port, cluster.url, cluster.bin


class Proxy:
    """Forwards 127.0.0.1:self.port to the server, counting connections and
    round trips, and holding each round trip's request back `delay` s."""

    def __init__(self, upstream):
        self.upstream, self.delay, self.lock = upstream, 0.0, threading.Lock()
        self.conns = self.turns = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def reset(self):
        with self.lock:
            self.conns = self.turns = 0

    def accept(self):
        while True:
            c, _ = self.sock.accept()
            u = socket.create_connection(("127.0.0.1", self.upstream))
            for x in (c, u):
                x.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.conns += 1
            state = {"server_spoke": True}
            threading.Thread(target=self.pump, args=(c, u, state, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, state, False), daemon=True).start()

    def pump(self, src, dst, state, client):
        try:
            while data := src.recv(65536):
                if client and state["server_spoke"]:
                    state["server_spoke"] = False
                    with self.lock:
                        self.turns += 1
                    if self.delay:
                        time.sleep(self.delay)
                        # What the client wrote meanwhile goes with it, as
                        # over a network with that latency: a batch written
                        # in parts is one round trip.
                        src.setblocking(False)
                        try:
                            while more := src.recv(65536):
                                data += more
                        except BlockingIOError:
                            pass
                        finally:
                            src.setblocking(True)
                elif not client:
                    state["server_spoke"] = True
                dst.sendall(data)
        except OSError:
            pass
        for x in (src, dst):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def counted(proxy, cmd):
    """Connections and round trips of one run of `cmd`."""
    proxy.reset()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
    with proxy.lock:
        return proxy.conns, proxy.turns


def timed(cmd, n=10):
    """The median wall time of `cmd` over n runs, in ms."""
    ts = []
    for _ in range(n):
        t = time.monotonic()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ts.append((time.monotonic() - t) * 1000)
    return sorted(ts)[len(ts) // 2]


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
    # `psql` as PATH finds it: on Debian, postgresql-common's pg_wrapper (a
    # Perl script that picks the cluster's version, then runs the binary
    # above), which is what `psql -c 'SELECT 1'` typed at a shell costs.
    on_path = shutil.which("psql")
    wrapped = on_path and os.path.realpath(on_path) != os.path.realpath(psql)
    hyper = ["hyperfine", "-N", "--warmup", "3", "--runs", str(a.runs),
             "--export-json", out,
             "-n", "files", f"{baton} run j --config {configs['files']}",
             "-n", "postgres", f"{baton} run j --config {configs['postgres']}",
             "-n", "psql SELECT 1", f"{psql} -X -q -d {url} -c 'SELECT 1'"]
    if wrapped:
        hyper += ["-n", "psql on PATH", f"{on_path} -X -q -d {url} -c 'SELECT 1'"]
    subprocess.run(hyper, check=True, stdout=subprocess.DEVNULL)
    r = {x["command"]: x for x in json.load(open(out))["results"]}
    files, pgr, floor = (r[k]["median"] * 1000 for k in ("files", "postgres", "psql SELECT 1"))

    def spread(k):
        """Mean and p90 in ms: a slow mode shows there, not in the median."""
        t = sorted(r[k]["times"])
        return r[k]["mean"] * 1000, t[min(len(t) - 1, len(t) * 9 // 10)] * 1000

    print("| measurement (hyperfine) | median | mean | p90 |")
    print("| --- | ---: | ---: | ---: |")
    for label, k, med in [("`baton run j`, files (lock file + SQLite)", "files", files),
                          ("`baton run j`, PostgreSQL store", "postgres", pgr),
                          ("`psql -c 'SELECT 1'` (floor: a process, a connection, a round trip)",
                           "psql SELECT 1", floor)]:
        mean, p90 = spread(k)
        print(f"| {label} | {med:.1f} ms | {mean:.1f} ms | {p90:.1f} ms |")
    if wrapped:
        shell = r["psql on PATH"]["median"] * 1000
        mean, p90 = spread("psql on PATH")
        print(f"| `psql -c 'SELECT 1'` as PATH finds it ({on_path}: "
              f"{os.path.basename(os.path.realpath(on_path))}) | {shell:.1f} ms | {mean:.1f} ms "
              f"| {p90:.1f} ms |")
    print(f"\nPostgreSQL / files = {pgr / files:.2f}x; PostgreSQL / psql floor = {pgr / floor:.2f}x")
    if wrapped:
        print(f"PostgreSQL / psql as PATH finds it = {pgr / shell:.2f}x")

    proxy = Proxy(port)
    purl = f"postgres://baton@127.0.0.1:{proxy.port}/postgres"
    jobs = "".join(f'[jobs.j{i}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n' for i in range(10))
    path = os.path.join(work, "proxied.toml")
    with open(path, "w") as f:
        f.write(f'[scheduler]\nstate_dir = "{work}/state-proxied"\ntimezone = "UTC"\n'
                f'[store]\nurl = "{purl}"\n{jobs}')
    subprocess.run([baton, "tick", "--config", path], check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    subprocess.run([baton, "run", "j0", "--config", path], check=True, stdout=subprocess.DEVNULL)
    floor_cmd = [psql, "-X", "-q", "-d", purl, "-c", "SELECT 1"]
    # Counted with each round trip held back 10 ms, so that a batch the
    # client writes in parts is counted once, as a network would see it.
    proxy.delay = 0.010
    print("\n| through a counting proxy | connections | round trips |")
    print("| --- | ---: | ---: |")
    for what, cmd in [("`baton run j0` (a `true` job)", [baton, "run", "j0", "--config", path]),
                      ("`baton tick`, nothing due (10 jobs)", [baton, "tick", "--config", path]),
                      ("`baton status`, 10 jobs", [baton, "status", "--config", path]),
                      ("`psql -c 'SELECT 1'` (floor)", floor_cmd)]:
        c, t = counted(proxy, cmd)
        print(f"| {what} | {c} | {t} |")
    proxy.delay = 0.020
    run_ms = timed([baton, "run", "j0", "--config", path])
    floor_ms = timed(floor_cmd)
    print(f"\nEach round trip delayed 20 ms (median of 10): `baton run j0` {run_ms:.0f} ms, "
          f"`psql -c 'SELECT 1'` {floor_ms:.0f} ms, ratio {run_ms / floor_ms:.2f}x")
finally:
    cluster.stop()
    shutil.rmtree(work, ignore_errors=True)
