"""An app with sessions, for sluice bench's cookie tests: GET /login?user=N answers with
a session cookie (SID, a random token kept for user N) and a cookie for another domain
(which a client must drop); GET /page?user=N answers 200 only with the SID of user N,
401 otherwise, and 400 when the other domain's cookie came back. GET /count gives the
pages served, per user, as JSON.

    python3 session_app.py PORT
"""
import json
import secrets
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

SESSIONS = {}
PAGES = {}
LOCK = threading.Lock()


def cookies(header):
    out = {}
    for part in (header or "").split(";"):
        if "=" in part:
            name, value = part.strip().split("=", 1)
            out[name] = value
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body, headers=()):
        data = body.encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        user = parse_qs(url.query).get("user", [""])[0]
        jar = cookies(self.headers.get("Cookie"))
        if url.path == "/login":
            token = secrets.token_hex(8)
            with LOCK:
                SESSIONS[token] = user
            return self.answer(200, "welcome", [
                ("Set-Cookie", f"SID={token}; Path=/; HttpOnly"),
                ("Set-Cookie", "tracker=1; Domain=elsewhere.test; Path=/"),
            ])
        if url.path == "/page":
            if "tracker" in jar:
                return self.answer(400, "a cookie of another domain came back")
            with LOCK:
                if SESSIONS.get(jar.get("SID")) != user:
                    return self.answer(401, "not this user's session")
                PAGES[user] = PAGES.get(user, 0) + 1
            return self.answer(200, f"page of {user}")
        if url.path == "/count":
            with LOCK:
                return self.answer(200, json.dumps(PAGES))
        self.answer(404, "no such page")

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
