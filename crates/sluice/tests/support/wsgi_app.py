"""A WSGI app as our users write them, for the lab's tests, run by gunicorn with sync
workers (each serves one request at a time; the others wait in the listen queue):

    gunicorn --workers N --chdir crates/sluice/tests/support wsgi_app:app

Each request hashes BURN times (none by default: its CPU work), then waits SLEEP_MS
milliseconds (15 by default: the app's other calls, on no CPU), after calling DEPENDENCY first when that is set (a URL: a service the app calls,
which may itself be this app with few workers). It publishes nothing about its workers.
"""
import hashlib
import os
import time
import urllib.request

SLEEP_S = float(os.environ.get("SLEEP_MS", "15")) / 1000
DEPENDENCY = os.environ.get("DEPENDENCY")
BURN = int(os.environ.get("BURN", "0"))


def burn():
    digest = b"seed"
    for _ in range(BURN):
        digest = hashlib.sha256(digest).digest()
    return digest


def app(environ, start_response):
    if DEPENDENCY:
        with urllib.request.urlopen(DEPENDENCY, timeout=30) as answer:
            answer.read()
    burn()
    time.sleep(SLEEP_S)
    body = b"ok\n"
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
