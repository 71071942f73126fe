"""bench/login-flow.sh's `locust`: login.toml's flow in Locust.

Each user, round its loop with no pause, logs in (the login page's CSRF token taken by
a regular expression, the account from its row of accounts.csv, the session cookie
kept by its client's cookie jar) and loads 8 pages. Run headless, one process:
    locust -f flow.py --headless -u 64 -r 64 -t 8s --host http://127.0.0.1:PORT --only-summary

FastHttpUser is Locust's fastest client (geventhttpclient); HttpUser (python-requests,
the default in Locust's documentation) runs the same flow at several times its CPU per
request: replace FastHttpUser by HttpUser, and `data=` is sent the same way.
"""

import csv
import itertools
import os
import re

from locust import FastHttpUser, constant, task

CSRF = re.compile(r'name="_csrf" type="hidden" value="([^"]+)"')
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "accounts.csv"), newline="") as f:
    ACCOUNTS = list(csv.DictReader(f))
# User N takes row N for its whole life (as sluice's `data = "accounts.csv"` does).
NEXT_ROW = itertools.count()
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class LoginFlow(FastHttpUser):
    wait_time = constant(0)  # a closed loop at saturation: no think time

    def on_start(self):
        self.account = ACCOUNTS[next(NEXT_ROW) % len(ACCOUNTS)]

    @task
    def flow(self):
        username, password = self.account["username"], self.account["password"]
        page = self.client.get("/login", name="GET /login")
        m = CSRF.search(page.text or "")
        if not m:
            return  # the failure is counted by nginx's log: no POST, no pages
        self.client.post("/login", name="POST /login", headers=FORM,
                         data=f"username={username}&password={password}&_csrf={m.group(1)}")
        for _ in range(8):
            self.client.get(f"/page?user={username}", name="GET /page")
