"""An app server as our users write them, for the lab's tests: HTTP in front, a fixed
pool of database connections behind (HikariCP's shape), one transaction per request.

    db_app.py PORT DRIVER DSN POOL WORK

DRIVER is `postgres` (psycopg2), `mysql` (pymysql) or `redis` (DSN `HOST:PORT`, its
protocol spoken here); WORK is `hot` (every request updates the same row and holds its
lock a few milliseconds, as a stock level or a counter does), `read` (a cheap read of
that row: the database has nothing to do), `cpu` (every request
runs a query, or for Redis a Lua script, that keeps the server's CPU busy) or `mix`
(nine requests in ten the cheap read, the tenth the CPU query: a slow statement among
fast ones). Debian's
python3-psycopg2 and python3-pymysql; run with /usr/bin/python3.
"""
import http.server
import itertools
import queue
import socket
import sys
import time

PORT, DRIVER, DSN, POOL, WORK = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]


class Redis:
    """One connection speaking RESP: a command out, one reply in."""

    def __init__(self, host, port):
        self.sock = socket.create_connection((host, int(port)))
        self.file = self.sock.makefile("rb")

    def call(self, *words):
        out = b"*%d\r\n" % len(words)
        for w in words:
            w = w.encode()
            out += b"$%d\r\n%s\r\n" % (len(w), w)
        self.sock.sendall(out)
        line = self.file.readline()
        if line[:1] == b"$" and int(line[1:]) >= 0:
            self.file.read(int(line[1:]) + 2)
        elif line[:1] == b"-":
            raise RuntimeError(line.decode())


def connect():
    if DRIVER == "redis":
        return Redis(*DSN.split(":"))
    if DRIVER == "postgres":
        import psycopg2
        return psycopg2.connect(DSN)
    import pymysql
    host, port, user, password, db = DSN.split(":")
    return pymysql.connect(host=host, port=int(port), user=user, password=password, database=db)


CPU_QUERY = {
    "postgres": "SELECT count(*) FROM generate_series(1, 300000)",
    "mysql": "SELECT BENCHMARK(300000, MD5('sluice'))",
}

# Requests so far, for `mix` (itertools.count is safe to share between threads).
COUNTER = itertools.count()

pool = queue.Queue()
for _ in range(POOL):
    pool.put(connect())


# A few milliseconds of Redis's one command thread.
LUA = "local x = 0 for i = 1, 300000 do x = x + i end return tostring(x)"


def work(conn):
    if DRIVER == "redis":
        conn.call("EVAL", LUA, "0")
        return
    cur = conn.cursor()
    if WORK == "read":
        cur.execute("SELECT n FROM stock WHERE id = 1")
        cur.fetchall()
    elif WORK == "mix" and next(COUNTER) % 10:
        cur.execute("SELECT n FROM stock WHERE id = 1")
        cur.fetchall()
    elif WORK == "hot":
        cur.execute("UPDATE stock SET n = n - 1 WHERE id = 1")
        # The app's own work inside the transaction, the row's lock held.
        time.sleep(0.004)
    else:
        cur.execute(CPU_QUERY[DRIVER])
        cur.fetchall()
    conn.commit()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        conn = pool.get()
        try:
            work(conn)
        finally:
            pool.put(conn)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # Headers and body leave in separate writes: without this, Nagle holds the body for
    # the client's delayed ACK (40 ms a request).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


Server(("127.0.0.1", int(PORT)), Handler).serve_forever()
