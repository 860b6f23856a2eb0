#!/usr/bin/env python3
"""baton daemon's performance aims, each against its floor or peer in the
same run:

1. idle: 1,000 jobs, nothing due: RSS (aim <= 15 MiB) and context switches
   of every thread over 30 s (aim 0), beside an idle `sleep` (the floor);
2. start lateness of an `every = "1s"` job over N occurrences, from the
   occurrence's instant to the job's first instruction (`date` in the
   step): p50, p99 (aim p99 <= 50 ms), beside the cost of that first
   instruction alone (`sh -c date`, the floor);
3. a tick over HTTP (keep-alive connection) against a `baton tick` process
   on the same configuration (aim >= 10x faster);
4. 100 concurrent clients ticking for 10 s: requests per second, and double
   runs of a job due every second (aim 0).

Usage: scripts/bench-daemon.py [--occurrences 200] [--idle-secs 30]
Builds the release binary first. Linux only (reads /proc).
"""
import argparse, http.client, json, os, re, signal, statistics, subprocess, sys
import tempfile, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--occurrences", type=int, default=200)
ap.add_argument("--idle-secs", type=int, default=30)
ap.add_argument("--ticks", type=int, default=300)
a = ap.parse_args()

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "-q", "-p", "baton"], cwd=root, check=True)
baton = os.path.join(root, "target/release/baton")
work = tempfile.mkdtemp(prefix="bench-daemon-")


# Without a token the daemon's TCP API is read-only: the ticks over HTTP
# authenticate with one.
TOKEN = "bench-token-0123456789abcdef"


def config(name, body):
    d = os.path.join(work, name)
    os.makedirs(d)
    token = os.path.join(d, "token")
    with open(os.open(token, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(TOKEN + "\n")
    path = os.path.join(d, "baton.toml")
    with open(path, "w") as f:
        f.write(f'[scheduler]\nstate_dir = "{d}/state"\ntimezone = "UTC"\n'
                f'[daemon]\ntoken_file = "{token}"\n{body}')
    return path


def start(path):
    p = subprocess.Popen([baton, "daemon", "--config", path, "--listen", "127.0.0.1:0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on http://(\S+)", line)
        if m:
            host, port = m.group(1).rsplit(":", 1)
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, host, int(port)
    sys.exit(f"the daemon did not start: exit {p.wait()}")


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=120)


def switches(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def post(conn, path):
    conn.request("POST", path, body="", headers={"Content-Type": "application/json",
                                                  "Authorization": f"Bearer {TOKEN}"})
    r = conn.getresponse()
    body = r.read()
    return r.status, body


out = {}

# 1. Idle.
jobs = "".join(f'[jobs.j{i}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n' for i in range(1000))
p, host, port = start(config("idle", jobs))
time.sleep(15)  # the start tick's blocking threads park and exit (10 s)
floor = subprocess.Popen(["sleep", str(a.idle_secs + 5)])
s0, f0 = switches(p.pid), switches(floor.pid)
time.sleep(a.idle_secs)
s1, f1 = switches(p.pid), switches(floor.pid)
rss = rss_kib(p.pid)
threads = len(os.listdir(f"/proc/{p.pid}/task"))
floor.kill()
stop(p)
out["idle"] = {"jobs": 1000, "rss_mib": round(rss / 1024, 2), "threads": threads,
               "switches": s1 - s0, "floor_switches": f1 - f0, "secs": a.idle_secs}

# 2. Start lateness.
lat = os.path.join(work, "lateness.txt")
path = config("late", f'[jobs.tick]\nevery = "1s"\nrun = "echo $BATON_OCCURRENCE $(date +%s.%N) >> {lat}"\n')
p, host, port = start(path)
while not os.path.exists(lat) or sum(1 for _ in open(lat)) < a.occurrences + 2:
    time.sleep(1)
stop(p)
rows = [l.split() for l in open(lat)][2:a.occurrences + 2]  # the first two: start-up


def epoch(rfc):
    import datetime
    return datetime.datetime.strptime(rfc, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


late = sorted((float(t) - epoch(o)) * 1000 for o, t in rows)
fl = []
for _ in range(50):
    t0 = time.perf_counter()
    subprocess.run(["sh", "-c", "date +%s.%N > /dev/null"])
    fl.append((time.perf_counter() - t0) * 1000)
fl.sort()
q = lambda xs, p: xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
out["lateness_ms"] = {"n": len(late), "p50": round(q(late, 0.5), 2), "p99": round(q(late, 0.99), 2),
                      "max": round(late[-1], 2), "floor_sh_date_p50": round(q(fl, 0.5), 2)}

# 3. HTTP tick against a `baton tick` process, 100 jobs, none due.
jobs = "".join(f'[jobs.j{i}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n' for i in range(100))
path = config("tick", jobs)
subprocess.run([baton, "tick", "--config", path], check=True)
p, host, port = start(path)
conn = http.client.HTTPConnection(host, port)
for _ in range(20):
    post(conn, "/v1/tick")
t0 = time.perf_counter()
for _ in range(a.ticks):
    st, _ = post(conn, "/v1/tick")
    assert st == 200
http_ms = (time.perf_counter() - t0) * 1000 / a.ticks
t0 = time.perf_counter()
n = max(20, a.ticks // 10)
for _ in range(n):
    subprocess.run([baton, "tick", "--config", path], check=True)
proc_ms = (time.perf_counter() - t0) * 1000 / n
stop(p)
out["tick_ms"] = {"jobs": 100, "http": round(http_ms, 3), "process": round(proc_ms, 3),
                  "ratio": round(proc_ms / http_ms, 1)}

# 4. 100 concurrent clients, a job due every second.
runs = os.path.join(work, "runs.txt")
path = config("clients", f'[jobs.sec]\nevery = "1s"\nrun = "echo $BATON_OCCURRENCE >> {runs}"\n'
              + "".join(f'[jobs.j{i}]\nschedule = "0 0 1 1 *"\nrun = ["true"]\n' for i in range(99)))
p, host, port = start(path)
count = [0] * 100
errors = [0]
end = time.time() + 10


def client(i):
    c = http.client.HTTPConnection(host, port)
    while time.time() < end:
        try:
            st, _ = post(c, "/v1/tick")
            if st == 200:
                count[i] += 1
            else:
                errors[0] += 1
        except Exception:
            errors[0] += 1
            c = http.client.HTTPConnection(host, port)


ts = [threading.Thread(target=client, args=(i,)) for i in range(100)]
t0 = time.time()
[t.start() for t in ts]
[t.join() for t in ts]
secs = time.time() - t0
time.sleep(2)
stop(p)
occ = [l.strip() for l in open(runs)]
out["clients"] = {"clients": 100, "rps": round(sum(count) / secs), "errors": errors[0],
                  "runs": len(occ), "double_runs": len(occ) - len(set(occ))}

print(json.dumps(out, indent=2))
i, l, t, c = out["idle"], out["lateness_ms"], out["tick_ms"], out["clients"]
print(f"""
| aim | measured | floor / peer (same run) |
| --- | ---: | ---: |
| idle, 1,000 jobs: RSS <= 15 MiB | {i['rss_mib']} MiB ({i['threads']} threads) | |
| idle: no wake-ups | {i['switches']} context switches in {i['secs']} s | idle `sleep`: {i['floor_switches']} |
| start lateness p99 <= 50 ms | p50 {l['p50']} ms, p99 {l['p99']} ms, max {l['max']} ms (n={l['n']}) | `sh -c date` alone: {l['floor_sh_date_p50']} ms |
| HTTP tick >= 10x `baton tick` | {t['http']} ms per HTTP tick | `baton tick`: {t['process']} ms, **{t['ratio']}x** |
| 100 clients ticking | {c['rps']} requests/s, {c['errors']} errors | {c['runs']} runs, **{c['double_runs']} double** |
""")
