"""An app with sessions, for sluice bench's cookie tests: GET /login?user=N answers with
a session cookie (SID, a random token kept for user N) and a cookie for another domain
(which a client must drop); GET /page?user=N answers 200 only with the SID of user N,
401 otherwise, and 400 when the other domain's cookie came back. GET /count gives the
pages served, per user, as JSON.

A form login as Spring Security's: GET /form sets a pre-login session (SID) and shows
its CSRF token in `<input name="_csrf" value="...">`; POST /signin with
username=NAME&password=pw-NAME&_csrf=TOKEN (the token of that SID) starts a new session
for NAME and answers JSON {"user": NAME, "token": BEARER}; 403 for a wrong token, 401
for a wrong password. GET /page?user=N then also passes with `Authorization: Bearer`
of N's token instead of the cookie.

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
FORMS = {}
BEARERS = {}
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
        if url.path == "/form":
            sid, csrf = secrets.token_hex(8), secrets.token_hex(8)
            with LOCK:
                FORMS[sid] = csrf
            page = f'<form method="post"><input name="_csrf" value="{csrf}"/></form>'
            return self.answer(200, page, [("Set-Cookie", f"SID={sid}; Path=/")])
        if url.path == "/page":
            if "tracker" in jar:
                return self.answer(400, "a cookie of another domain came back")
            bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
            with LOCK:
                owner = BEARERS.get(bearer) or SESSIONS.get(jar.get("SID"))
                if owner != user:
                    return self.answer(401, "not this user's session")
                PAGES[user] = PAGES.get(user, 0) + 1
            return self.answer(200, f"page of {user}")
        if url.path == "/count":
            with LOCK:
                return self.answer(200, json.dumps(PAGES))
        self.answer(404, "no such page")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        form = parse_qs(self.rfile.read(length).decode())
        field = lambda name: form.get(name, [""])[0]
        sid = cookies(self.headers.get("Cookie")).get("SID")
        if urlparse(self.path).path != "/signin":
            return self.answer(404, "no such page")
        with LOCK:
            if not sid or FORMS.pop(sid, None) != field("_csrf"):
                return self.answer(403, "Invalid CSRF token")
            user = field("username")
            if field("password") != f"pw-{user}":
                return self.answer(401, "bad credentials")
            session, bearer = secrets.token_hex(8), secrets.token_hex(8)
            SESSIONS[session] = user
            BEARERS[bearer] = user
        body = json.dumps({"user": user, "token": bearer})
        self.answer(200, body, [("Set-Cookie", f"SID={session}; Path=/; HttpOnly")])

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
