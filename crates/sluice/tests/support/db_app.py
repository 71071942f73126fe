"""An app server as our users write them, for the lab's tests: HTTP in front, a fixed
pool of database connections behind (HikariCP's shape), one transaction per request.

    db_app.py PORT DRIVER DSN POOL WORK

DRIVER is `postgres` (psycopg2) or `mysql` (pymysql); WORK is `hot` (every request
updates the same row and holds its lock a few milliseconds, as a stock level or a
counter does) or `cpu` (every request runs a query that keeps the database's CPU busy).
Debian's python3-psycopg2 and python3-pymysql; run with /usr/bin/python3.
"""
import http.server
import queue
import sys
import time

PORT, DRIVER, DSN, POOL, WORK = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]


def connect():
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

pool = queue.Queue()
for _ in range(POOL):
    pool.put(connect())


def work(conn):
    cur = conn.cursor()
    if WORK == "hot":
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
