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
    # the MAC's first character carries 6 bits of it (its last only 4, the rest padding: replacing the last two
    # by "AA" left the MAC's bytes unchanged once in ~1000 runs, and the "forged" cookie was the real one)
    tampered = ("B" if mac[0] == "A" else "A") + mac[1:]
    for forged in (payload + "." + tampered, "x" + payload + "." + mac, "garbage"):
        c.cookies.set("ko_session", forged, path="/ui")
        assert c.get("/ui/", follow_redirects=False).status_code == 303, forged
        c.cookies.clear()


def test_sign_out_ends_the_session_server_side(api):
    """A copy of the cookie kept from before sign-out (a stolen one, a second tab) is refused afterwards."""
    from sqlalchemy import func, select

    from kernelopt.storage.models import UiSession

    c = api.client
    sign_in(c, api.key)
    old = c.cookies.get("ko_session")
    with api.sessionmaker() as db:  # the session's row, keyed by a hash: the cookie's id is not in the table
        ids = db.scalars(select(UiSession.id).where(UiSession.team_id == api.team.id)).all()
    assert len(ids) == 1 and old.split(".")[0] not in ids[0]
    other = type(c)(api.app)  # a second sign-in of the same key: a session of its own
    sign_in(other, api.key)
    token = csrf_of(c.get("/ui/").text)
    assert c.post("/ui/logout", data={"csrf": token}, follow_redirects=False).status_code == 303
    with api.sessionmaker() as db:
        assert db.scalar(select(func.count()).select_from(UiSession).where(UiSession.team_id == api.team.id)) == 1
    replay = type(c)(api.app)
    replay.cookies.set("ko_session", old, path="/ui")
    r = replay.get("/ui/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/login"
    assert replay.get("/ui/live?ids=abc").status_code == 401
    assert replay.post("/ui/jobs/abc/cancel", data={"csrf": token}, follow_redirects=False).headers[
        "location"] == "/ui/login"
    assert other.get("/ui/", follow_redirects=False).status_code == 200  # the other session lives on


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


def test_a_kept_baseline_nothing_timed_is_not_a_bare_one(api):
    # a graph-break fallback keeps the compiler's code and ends before any timing (H200, level3/09)
    worker = ScriptedWorker(api)
    kept = api.submit(b"print('k')\n", filename="graph_break.py").json()["id"]
    worker.run(kept, speedup=1.0, cause="graph-break: .item() in control flow",
               result={"timing": "measured", "baseline_ms": None, "optimized_ms": None, "noise_pct": None})
    timed = api.submit(b"print('t')\n", filename="timed.py").json()["id"]
    worker.run(timed, speedup=1.0, cause="near-optimal", result={"timing": "measured"})
    sign_in(api.client, api.key)
    assert "1.00× (compiler&#39;s code kept, not timed)" in api.client.get(f"/ui/jobs/{kept}").text
    page = api.client.get(f"/ui/jobs/{timed}").text
    assert "1.00×" in page and "not timed" not in page
    assert api.client.get(f"/ui/live?ids={kept}").json()[kept]["speedup"] == "1.00× (compiler's code kept, not timed)"


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


# ---------------------------------------------------------------- overview figures and the job page's report

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[2] / "testdata" / "ui"


def fixture_report() -> tuple[dict, bytes, bytes]:
    import json

    raw = (FIXTURES / "report.json").read_bytes()
    return json.loads(raw), raw, (FIXTURES / "trajectory.jsonl").read_bytes()


def section(html: str, marker: str, end: str = "</table>") -> str:
    start = html.index(marker)
    return html[start:html.index(end, start)]


def test_overview_counts_only_measured_speedups_and_draws_charts(api, worker):
    report, raw, traj = fixture_report()
    jobs = {}
    for name, kw in {
        "opt_strict": dict(outcome="optimized", speedup=2.0, cause=None),
        "opt_tf32": dict(outcome="optimized", speedup=1.5, cause=None, result={"precision": "tf32"}),
        "fallback_measured": dict(outcome="fallback", speedup=1.0, cause="no-faster-candidate: none"),
        # succeeded, but no speed recorded at all: "not measured", never a 1.0x in a geomean
        "fallback_unmeasured": dict(outcome="fallback", speedup=None, cause="timeout: budget spent",
                                    result={"timing": None, "baseline_ms": None}),
        "no_gpu": dict(outcome="fallback", speedup=None, cause="no-gpu: interpreter",
                       result={"timing": "not-measured", "timing_note": "no GPU"}),
    }.items():
        jobs[name] = api.submit(name.encode(), filename=f"{name}.py", tag="suite").json()["id"]
        worker.run(jobs[name], **kw)
    c = api.client
    sign_in(c, api.key)
    page = c.get("/ui/")
    assert page.status_code == 200
    html = page.text
    assert '<svg id="chart-over-time"' in html and '<svg id="chart-speedups"' in html and 'role="img"' in html
    assert "<script" not in html.split("</head>", 1)[1]  # the charts are SVG drawn by the server, no script
    assert "Deployed speedup vs torch.compile of 3 measured jobs" in html
    dist = section(html, 'id="distribution-data"')
    assert "<th scope=\"row\">1.0× kept</th><td class=\"num\">1</td>" in dist
    assert "1.5–2×</th><td class=\"num\">1</td>" in dist and "2–3×</th><td class=\"num\">1</td>" in dist
    over_time = section(html, 'id="over-time-data"')
    assert over_time.count("<tr>") == 2 and '<td class="num">2</td>' in over_time  # 2 optimized, 3 fallback
    stats = c.get("/v1/stats", headers=api.headers()).json()
    assert stats["measured"] == 3 and stats["not_measured"] == 2
    assert stats["geomean_speedup"] == pytest.approx((2.0 * 1.5 * 1.0) ** (1 / 3))
    assert f'id="geomean">{stats["geomean_speedup"]:.3f}×' in html
    by_precision = section(html, 'id="by-precision"')
    strict = section(by_precision, ">strict<", "</tr>")
    tf32 = section(by_precision, ">tf32<", "</tr>")
    # strict: 2.0 and the measured fallback (1.0); the two unmeasured jobs are counted apart
    assert [v for v in re.findall(r'class="num">([^<]*)<', strict)][:5] == ["4", "2", "2", f"{2 ** 0.5:.3f}×",
                                                                             "2.000×"]
    assert "1.500×" in tf32
    assert 'id="llm-tokens">none recorded<' in html and "no job has called an LLM" in html
    # a job whose report.json records LLM usage counts in the tokens tile (the worker copies it into `jobs`)
    llm_job = api.submit(b"llm", filename="llm.py").json()["id"]
    worker.run(llm_job, outcome="optimized", speedup=1.7316, cause=None, result=report["result"],
               artifacts={"report.json": raw, "trajectory.jsonl": traj})
    html = c.get("/ui/").text
    assert 'id="llm-tokens">7,168<' in html and "LLM tokens of 3 calls in 1 job, cost 0.01" in html


def test_job_page_draws_the_report(api, worker):
    report, raw, traj = fixture_report()
    job = api.submit(b"model", filename="06_linear_layernorm_residual.py").json()["id"]
    worker.run(job, outcome="optimized", speedup=1.7316, cause=report["result"]["cause"], result=report["result"],
               artifacts={"report.json": raw, "trajectory.jsonl": traj, "report.md": b"# r\n",
                          "diff__kernelopt_group_1.diff": DIFF})
    c = api.client
    sign_in(c, api.key)
    html = c.get(f"/ui/jobs/{job}").text
    # per-kernel share of GPU time, largest first, with the roofline and Nsight Compute figures
    kernels = section(html, 'id="kernels"')
    gemm, ln = kernels.index("sm80_xmma_gemm"), kernels.index("triton_red_fused_add_native_layer_norm_0")
    assert gemm < ln and "96.5%" in kernels and "3.5%" in kernels and "width: 96.5%" in kernels
    assert "3965 (93%)" in kernels and "memory-bound 21% / 91%, 78%" in kernels
    assert "MemoryL2Compression" in kernels and "too small to clear gamma" in kernels
    assert "memory roofline 4250 GB/s" in html and "Nsight Compute: profiled 1 kernel" in html
    # the search tree: every candidate, nested under its parent, with the gate that stopped it
    tree = section(html, 'aria-label="Search of _kernelopt_group_1"', "</section>")
    assert tree.count('class="cand ') == 6  # Inductor's kernel and five candidates
    accepted = section(tree, "<code>64abb737adfc</code>", "</li>")
    assert "deployed: passed Gates 1–4" in accepted and "0.7922 ms" in accepted and "(1.75×)" in accepted
    parent = section(tree, "<code>a1b2c3d4e5f6</code>", "</li></ul></li>")
    assert "64abb737adfc" in parent and "0f0e0d0c0b0a" in parent  # derived candidates drawn under it
    assert "stopped at gate1" in tree and "out of shared memory" in tree and "stopped at gate2" in tree
    assert "too slow (needs ≥ 1.031× at kernel level)" in section(tree, "<code>77aa88bb99cc</code>", "</li>")
    assert "5 candidates, 3 passed Gates 1–2; best kernel speedup 1.745×" in tree
    # precision: the policy, and the declared fp32 emulation that was deployed
    precision = section(html, 'id="precision"', "</section>")
    assert "Policy <strong>strict</strong>" in precision and "fp32 emulated on tensor cores" in precision
    assert "<code>3xtf32</code>" in precision and "ρ 0.272" in precision and "instructions in it: yes" in precision
    assert 'id="vs-eager">1.77× (eager 1.4636 ms' in html and 'id="job-llm">7,168 in 3 calls' in html
    # links to every artifact, through the session
    for name in ("report.json", "trajectory.jsonl", "report.md", "diff__kernelopt_group_1.diff"):
        assert f'href="/ui/jobs/{job}/artifacts/{name}"' in html, name
        assert c.get(f"/ui/jobs/{job}/artifacts/{name}").status_code == 200, name


def test_job_page_without_a_report_says_so(api, worker):
    job = api.submit(b"k", filename="k.py").json()["id"]
    worker.run(job, speedup=None, result={"timing": "not-measured", "timing_note": "no GPU"})
    sign_in(api.client, api.key)
    html = api.client.get(f"/ui/jobs/{job}").text
    assert "No report.json yet." in html and "No kernel was searched (no report.json yet)" in html
    assert "the deployed code computes in <strong>full fp32 precision</strong>" in html


def test_charts_are_plain_svg_with_titles():
    from kernelopt.api.ui.charts import histogram, stacked_bars

    svg = str(stacked_bars("c1", "Jobs <per day>", [("12-01", {"optimized": 3, "failed": 1}), ("12-02", {})],
                           ["optimized", "failed"]))
    assert svg.startswith('<svg id="c1"') and "<title id=\"c1-t\">Jobs &lt;per day&gt;</title>" in svg
    assert svg.count("<rect") == 2 and "12-01: 3 optimized" in svg and "12-01: 1 failed" in svg
    assert "no measured jobs" in str(histogram("c2", "t", [("1.0×", 0)]))
    bars = str(histogram("c3", "t", [("a", 4), ("b", 0)]))
    assert bars.count("<rect") == 2 and "a: 4 jobs" in bars


def test_overview_shows_the_teams_avoid_list_with_its_jobs(api, worker):
    """Issue 11: the AVOID list on the overview, computed by service.strategy_memory from the
    strategy outcomes the worker records after each job, with the jobs it rests on."""
    from kernelopt.service.strategy_memory import record_job

    c = api.client
    sign_in(c, api.key)
    assert "empty: no strategy has failed often enough yet" in section(c.get("/ui/").text, 'id="avoid-list"')
    job = api.submit(b"k", filename="k.py").json()["id"]
    worker.run(job, outcome="fallback", speedup=1.0, cause="no-faster-candidate: none")
    report = {"agents": {"strategy_outcomes": [{"strategy": "loop-tiling", "attempts": 4, "successes": 0},
                                               {"strategy": "block-sizes", "attempts": 4, "successes": 3}]}}
    with api.sessionmaker() as s:
        record_job(s, api.team.id, job, report)
    avoid = section(c.get("/ui/").text, 'id="avoid-list"')
    assert ">loop-tiling<" in avoid and ">0%<" in avoid and f'href="/ui/jobs/{job}"' in avoid
    assert "block-sizes" not in avoid  # 75% success: not avoided
