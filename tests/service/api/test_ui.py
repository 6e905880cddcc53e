"""The dashboard (/ui) without a browser: sign-in and its cookie, team scoping, CSRF on every POST,
the form submission, downloads through the session (PostgreSQL and SQLite, like the API tests)."""
from __future__ import annotations

import re

import pytest

from tests.service.api.conftest import ScriptedWorker

DIFF = b"--- inductor\n+++ candidate\n@@ -1,2 +1,2 @@\n-BLOCK = 64\n+BLOCK = 128\n x = 1\n"


def sign_in(client, key: str):
    return client.post("/ui/login", data={"api_key": key}, follow_redirects=False)


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


@pytest.fixture
def two_teams(api):
    """Team A (api's) with a finished job with artifacts and a queued one; team B with one finished job."""
    worker = ScriptedWorker(api)
    a_done = api.submit(b"print('a')\n", filename="alpha_model.py", tag="suite-a").json()["id"]
    worker.run(a_done, outcome="optimized", speedup=1.25, cause=None,
               artifacts={"report.md": b"# alpha report\n", "diff_k0.diff": DIFF})
    a_queued = api.submit(b"print('a2')\n", filename="alpha_queued.py").json()["id"]
    team_b, key_b = api.new_team()
    b_done = api.submit(b"print('b')\n", filename="bravo_secret.py", key=key_b, tag="suite-b").json()["id"]
    worker.run(b_done, artifacts={"report.md": b"# bravo report\n"})
    return {"a_done": a_done, "a_queued": a_queued, "b_done": b_done, "key_b": key_b}


def test_pages_need_a_session(api):
    c = api.client
    for path in ("/ui/", "/ui/jobs", "/ui/submit", "/ui/jobs/abc"):
        r = c.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/login", path
    assert c.get("/ui/live?ids=abc").status_code == 401
    assert c.post("/ui/jobs/abc/cancel", data={}, follow_redirects=False).headers["location"] == "/ui/login"
    r = c.get("/ui/login")
    assert r.status_code == 200 and 'type="password"' in r.text and "Content-Security-Policy" in r.headers


def test_sign_in_sets_a_signed_httponly_strict_cookie_without_the_key(api):
    c = api.client
    bad = sign_in(c, "ko_" + "x" * 40)
    assert bad.status_code == 401 and "not valid" in bad.text and "ko_session" not in bad.headers.get("set-cookie", "")
    r = sign_in(c, api.key)
    assert r.status_code == 303 and r.headers["location"] == "/ui/"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("ko_session=") and "HttpOnly" in cookie and "SameSite=strict" in cookie.replace(
        "SameSite=Strict", "SameSite=strict") and "Path=/ui" in cookie
    value = c.cookies.get("ko_session")
    assert api.key not in cookie and api.key[3:12] not in value
    assert api.key not in r.headers["location"]
    page = c.get("/ui/")
    assert page.status_code == 200 and api.team.name in page.text


def test_forged_or_tampered_cookie_is_refused(api):
    c = api.client
    sign_in(c, api.key)
    value = c.cookies.get("ko_session")
    payload, mac = value.split(".")
    c.cookies.clear()
    for forged in (payload + "." + mac[:-2] + "AA", "x" + payload + "." + mac, "garbage"):
        c.cookies.set("ko_session", forged, path="/ui")
        assert c.get("/ui/", follow_redirects=False).status_code == 303, forged
        c.cookies.clear()


def test_revoking_the_key_ends_its_sessions(api):
    from kernelopt.service.auth import revoke_api_key

    c = api.client
    sign_in(c, api.key)
    assert c.get("/ui/", follow_redirects=False).status_code == 200
    with api.sessionmaker() as s:
        assert revoke_api_key(s, api.key)
    assert c.get("/ui/", follow_redirects=False).status_code == 303  # auth cache TTL is 0 in tests


def test_every_page_is_scoped_to_the_team(api, two_teams):
    c = api.client
    sign_in(c, api.key)
    for path in ("/ui/", "/ui/jobs", f"/ui/jobs/{two_teams['a_done']}"):
        r = c.get(path)
        assert r.status_code == 200, path
        assert "bravo_secret" not in r.text and "suite-b" not in r.text and two_teams["b_done"] not in r.text, path
    overview = c.get("/ui/").text
    by_tag = overview[overview.index('id="by-tag"'):overview.index("</table>", overview.index('id="by-tag"'))]
    assert "suite-a" in by_tag and "1.250×" in by_tag
    jobs = c.get("/ui/jobs").text
    assert "alpha_model.py" in jobs and "alpha_queued.py" in jobs and "1.25×" in jobs
    job = c.get(f"/ui/jobs/{two_teams['a_done']}").text
    assert "diff_k0.diff" in job and "report.md" in job and "BLOCK = 128" in job
    # another team's job, its artifacts, its live status: as if it did not exist
    other = two_teams["b_done"]
    assert c.get(f"/ui/jobs/{other}").status_code == 404
    assert c.get(f"/ui/jobs/{other}/artifacts/report.md").status_code == 404
    assert c.get(f"/ui/live?ids={other},{two_teams['a_queued']}").json().keys() == {two_teams["a_queued"]}
    # the download is the API's verified one, authorized by the cookie
    r = c.get(f"/ui/jobs/{two_teams['a_done']}/artifacts/report.md")
    assert r.status_code == 200 and r.content == b"# alpha report\n" and "attachment" in r.headers["content-disposition"]
    # filters
    assert "alpha_queued.py" not in c.get("/ui/jobs?status=succeeded").text
    assert "alpha_model.py" not in c.get("/ui/jobs?status=queued").text
    assert "alpha_queued.py" not in c.get("/ui/jobs?tag=suite-a").text
    assert "alpha_model.py" in c.get("/ui/jobs?outcome=optimized").text
    # team B signed in sees only its own
    c.cookies.clear()
    sign_in(c, two_teams["key_b"])
    assert "bravo_secret.py" in c.get("/ui/jobs").text and "alpha_model.py" not in c.get("/ui/jobs").text
    assert c.get(f"/ui/jobs/{two_teams['a_done']}").status_code == 404


def test_not_measured_is_said_so(api):
    worker = ScriptedWorker(api)
    job = api.submit(b"print('k')\n", filename="kernel.py").json()["id"]
    worker.run(job, speedup=None, result={"timing": "not-measured", "timing_note": "no GPU: interpreter"})
    sign_in(api.client, api.key)
    assert "not measured" in api.client.get("/ui/jobs").text
    assert "not measured (no GPU: interpreter)" in api.client.get(f"/ui/jobs/{job}").text


def test_cancel_and_sign_out_need_the_csrf_token(api, two_teams):
    c = api.client
    sign_in(c, api.key)
    job = two_teams["a_queued"]
    page = c.get(f"/ui/jobs/{job}").text
    token = csrf_of(page)
    assert c.post(f"/ui/jobs/{job}/cancel", data={}).status_code == 403
    assert c.post(f"/ui/jobs/{job}/cancel", data={"csrf": token[:-2] + "xx"}).status_code == 403
    assert api.client.get(f"/v1/jobs/{job}", headers=api.headers()).json()["status"] == "queued"
    r = c.post(f"/ui/jobs/{job}/cancel", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == f"/ui/jobs/{job}"
    assert api.client.get(f"/v1/jobs/{job}", headers=api.headers()).json()["status"] == "cancelled"
    assert c.post(f"/ui/jobs/{two_teams['b_done']}/cancel", data={"csrf": token}).status_code == 404
    # a token is bound to its session: another session's token is refused
    other = type(c)(api.app)
    sign_in(other, api.key)
    assert c.post("/ui/logout", data={"csrf": csrf_of(other.get("/ui/").text)}).status_code == 403
    r = c.post("/ui/logout", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and 'ko_session=""' in r.headers["set-cookie"].replace("ko_session=;", 'ko_session="";')
    assert c.get("/ui/", follow_redirects=False).status_code == 303


def test_submit_form_queues_a_job_and_lands_on_its_page(api):
    c = api.client
    sign_in(c, api.key)
    token = csrf_of(c.get("/ui/submit").text)
    files = {"file": ("form_kernel.py", b"print('k')\n", "text/x-python")}
    form = {"dtype": "fp32", "precision": "strict", "time_budget_s": "120", "tag": "from-form"}
    assert c.post("/ui/submit", data=form, files=files).status_code == 403  # no token
    r = c.post("/ui/submit", data={**form, "csrf": token}, files=files, follow_redirects=False)
    assert r.status_code == 303, r.text
    job_id = r.headers["location"].rsplit("/", 1)[-1]
    assert api.dispatcher.enqueued[-1] == job_id
    job = api.client.get(f"/v1/jobs/{job_id}", headers=api.headers()).json()
    assert job["tag"] == "from-form" and job["options"]["time_budget_s"] == 120 and job["filename"] == "form_kernel.py"
    page = c.get(r.headers["location"]).text
    assert 'data-terminal="no"' in page and "Cancel job" in page
    bad = c.post("/ui/submit", data={**form, "csrf": token, "dtype": "int3"}, files=files)
    assert bad.status_code == 422 and "invalid options" in bad.text


def test_side_by_side_pairs_removed_and_added_lines():
    import difflib

    from kernelopt.api.ui.routes import side_by_side

    old = "a\nb\n--x\nc\nd\ne\nf\ng\nh\ni\nj\nk\n".splitlines(True)
    new = "a\nB\nc\nd\nNEW\ne\nf\ng\nh\ni\nj\nK\n".splitlines(True)
    rows = side_by_side("".join(difflib.unified_diff(old, new, "inductor", "accepted", n=1)).splitlines())
    assert rows == [
        (None, "@@ -1,6 +1,6 @@", "hunk", None, "", "hunk"),
        (1, "a", "ctx", 1, "a", "ctx"), (2, "b", "del", 2, "B", "add"), (3, "--x", "del", None, "", "empty"),
        (4, "c", "ctx", 3, "c", "ctx"), (5, "d", "ctx", 4, "d", "ctx"), (None, "", "empty", 5, "NEW", "add"),
        (6, "e", "ctx", 6, "e", "ctx"),
        (None, "@@ -11,2 +11,2 @@", "hunk", None, "", "hunk"),
        (11, "j", "ctx", 11, "j", "ctx"), (12, "k", "del", 12, "K", "add"),
    ]


def test_cross_origin_posts_are_refused(api, two_teams):
    c = api.client
    evil = {"Origin": "https://evil.example"}
    assert c.post("/ui/login", data={"api_key": api.key}, headers=evil).status_code == 403  # login CSRF
    assert c.post("/ui/login", data={"api_key": api.key}, headers={"Origin": "null"}).status_code == 403
    assert "ko_session" not in c.cookies
    assert sign_in(c, api.key).status_code == 303
    same = {"Origin": "http://testserver"}
    token = csrf_of(c.get("/ui/").text)
    job = two_teams["a_queued"]
    assert c.post(f"/ui/jobs/{job}/cancel", data={"csrf": token}, headers=evil).status_code == 403
    r = c.post(f"/ui/jobs/{job}/cancel", data={"csrf": token}, headers=same, follow_redirects=False)
    assert r.status_code == 303
