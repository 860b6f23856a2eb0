"""A throwaway PostgreSQL cluster for the benchmark scripts: Debian's
newest server, initdb with trust authentication and no fsync, on a free
port of 127.0.0.1, its data in a directory of its own. Run as root (the
server then runs as the postgres user) or as a user who may run initdb.

    pg = throwaway_pg.Cluster(work).start()
    try: ... pg.url, pg.port, pg.bin ...
    finally: pg.stop()
"""
import glob, os, shutil, socket, subprocess


class Cluster:
    def __init__(self, work):
        self.bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
        self.data = os.path.join(work, "pg")
        self.asroot = os.geteuid() == 0
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.url = f"postgres://baton@127.0.0.1:{self.port}/postgres"

    def _pg(self, *cmd):
        full = [os.path.join(self.bin, cmd[0]), *cmd[1:]]
        if self.asroot:
            full = ["runuser", "-u", "postgres", "--", *full]
        subprocess.run(full, check=True, stdout=subprocess.DEVNULL)

    def start(self):
        os.mkdir(self.data)
        if self.asroot:
            shutil.chown(self.data, "postgres")
        d = self.data
        self._pg("initdb", "-D", d + "/data", "-U", "baton", "--auth=trust", "--no-sync")
        self._pg("pg_ctl", "-D", d + "/data", "-l", d + "/log", "-w", "-o",
                 f"-k {d} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        return self

    def stop(self):
        self._pg("pg_ctl", "-D", self.data + "/data", "-m", "immediate", "stop")
