"""The dashboard in a real browser: headless Debian chromium (chromium-driver, Selenium) against a real
`kernelopt serve` (embedded: SQLite, in-process dispatcher) with seeded jobs of two teams.

Sign-in, every page with the team's data and none of the other team's, a download, a job submitted
from the form whose status changes live (the real engine, a kernel on the Triton interpreter) on its
page and in the jobs table without a reload, sign-out. Screenshots of each page go to
$KERNELOPT_UI_SCREENSHOTS (docs/screenshots when regenerating the README's) or tmp_path.
Page timings (request start → load event) are printed.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.service.api.conftest import free_port
from tests.service.api.test_embedded_serve import CLI, REPO, _env
from tests.service.conftest import stop_server

KERNEL = REPO / "benchmarks" / "kernels" / "add_relu_kernel.py"
UI_DATA = REPO / "tests" / "testdata" / "ui"  # report.json + trajectory.jsonl shaped as the engine writes them
DIFF = (b"--- inductor/triton_poi_fused_add_relu_0\n+++ accepted/triton_poi_fused_add_relu_0\n"
        b"@@ -3,6 +3,6 @@\n @triton.jit\n def triton_poi_fused_add_relu_0(in_ptr0, in_ptr1, out_ptr0, xnumel,"
        b" XBLOCK: tl.constexpr):\n-    # num_warps=4\n+    # num_warps=8, vectorized loads\n"
        b"     xoffset = tl.program_id(0) * XBLOCK\n-    xindex = xoffset + tl.arange(0, XBLOCK)[:]\n"
        b"+    xindex = xoffset + tl.arange(0, XBLOCK)\n     xmask = xindex < xnumel\n")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000"]


def seed(data_dir: Path) -> dict:
    """Two teams and their jobs, through the service layer (the states a worker would leave)."""
    from sqlalchemy import update

    from kernelopt.service.auth import create_api_key, create_team
    from kernelopt.service.jobs import add_event, claim_job, create_job, fail_job, finish_job, request_cancel, set_stage
    from kernelopt.service.settings import Settings
    from kernelopt.service.strategy_memory import record_job
    from kernelopt.storage.blobs import BlobStore
    from kernelopt.storage.db import make_engine, make_sessionmaker, upgrade_database
    from kernelopt.storage.models import Job

    settings = Settings(data_dir=data_dir, database_url=None, broker_url=None)
    url = settings.effective_database_url
    upgrade_database(url)
    engine = make_engine(url)
    blobs = BlobStore(settings.blobs_dir)
    out: dict = {"jobs": {}}
    scratch = data_dir.parent / "seed-artifacts"
    with make_sessionmaker(engine)() as s:
        for team_name in ("alpha", "bravo"):
            team = create_team(s, team_name)
            out[team_name] = {"key": create_api_key(s, team.id), "id": team.id}

        def job(team: str, filename: str, tag: str | None, result: dict | None, artifacts: dict | None = None,
                error: str | None = None, cancel: bool = False, gpu_s: float = 0.0) -> str:
            j, _ = create_job(s, out[team]["id"], filename, f"# {filename}\n".encode(), {"precision": "strict"},
                              None, None, tag, blobs, settings)
            out["jobs"][filename] = j.id
            if cancel:
                request_cancel(s, out[team]["id"], j.id)
                return j.id
            claim_job(s, j.id, "seed-worker")
            for stage in ("load", "compile", "profile", "search", "verify"):
                set_stage(s, j.id, stage)
                add_event(s, j.id, stage, "stage_started", f"{stage} started", {})
            if error:
                fail_job(s, j.id, "seed-worker", error)
                return j.id
            files = []
            for name, content in (artifacts or {}).items():
                p = scratch / j.id / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(content)
                files.append((name, p))
            res = {"precision": "strict", "reduced_precision": False, "error": None,
                   "stage_seconds": {"load": 2.1, "compile": 14.6, "profile": 3.2, "search": 182.4, "verify": 21.7},
                   "artifacts": sorted(artifacts or {}), **(result or {})}
            assert finish_job(s, j.id, "seed-worker", res, files, blobs)
            s.execute(update(Job).where(Job.id == j.id).values(gpu_seconds=gpu_s))
            s.commit()
            stored = json.loads((artifacts or {}).get("report.json") or b"{}")
            if stored.get("llm") or stored.get("agents"):  # into its row, as worker.execute._record_agents does
                record_job(s, out[team]["id"], j.id, stored)
            return j.id

        measured = {"timing": "measured", "baseline_ms": 0.412, "noise_pct": 0.8}
        report = json.loads((UI_DATA / "report.json").read_text())
        job("alpha", "linear_layernorm_residual.py", "vision", {**report["result"], "cause": None},
            {"report.md": b"# linear_layernorm_residual: optimized 1.73x\n",
             "report.json": (UI_DATA / "report.json").read_bytes(),
             "trajectory.jsonl": (UI_DATA / "trajectory.jsonl").read_bytes(),
             "diff__kernelopt_group_1.diff": DIFF, "optimized_module.py": b"# optimized module\n"},
            gpu_s=450.0)
        job("alpha", "mlp_gelu.py", "nlp",
            {**measured, "outcome": "fallback", "speedup": 1.0, "optimized_ms": 0.412,
             "cause": "no-faster-candidate: 37 candidates passed Gates 1-2, none faster by 3%"},
            {"report.md": b"# mlp_gelu: fallback\n"}, gpu_s=300.0)
        job("alpha", "softmax_kernel.py", "nlp",
            {"outcome": "fallback", "speedup": None, "timing": "not-measured",
             "timing_note": "no GPU: the Triton interpreter checks correctness only",
             "cause": "no-gpu: interpreter run"}, {"report.md": b"# softmax\n"})
        job("alpha", "broken_model.py", None, None, error="ImportError: no module named 'foo'")
        job("alpha", "withdrawn.py", "vision", None, cancel=True)
        job("bravo", "bravo_secret_model.py", "bravo-suite",
            {**measured, "outcome": "optimized", "speedup": 2.5, "optimized_ms": 0.16, "cause": None},
            {"report.md": b"# bravo secret\n"}, gpu_s=999.0)
    engine.dispose()
    return out


@pytest.fixture
def server(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    seeded = seed(data)
    port = free_port()
    log = (tmp_path / "serve.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-c", CLI, "serve", "--port", str(port)], cwd=tmp_path,
                            env=_env(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, Path(log.name).read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, Path(log.name).read_text()
            time.sleep(0.2)
        yield url, seeded, Path(log.name)
    finally:
        stop_server(proc, log)


@pytest.fixture
def browser(tmp_path):
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromium-driver are needed (scripts/bootstrap installs them: "
                    "apt-get install -y chromium chromium-driver)", pytrace=False)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in FLAGS + [f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        opts.add_argument(flag)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver_path))
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()


def test_dashboard_in_a_browser(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    url, seeded, log = server
    d = browser
    shots = Path(os.environ.get("KERNELOPT_UI_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    wait = WebDriverWait(d, 20)

    def load(path: str, name: str) -> str:
        d.get(url + path)
        nav = d.execute_script("const n = performance.getEntriesByType('navigation')[0];"
                               "return [n.requestStart, n.responseEnd, n.loadEventEnd];")
        timings[name] = nav[2] - nav[0]
        return d.page_source

    def text() -> str:
        return d.find_element(By.TAG_NAME, "body").text

    def shot(name: str) -> None:
        """A screenshot, stored as a 256-colour PNG (a third of the size: they are committed under docs/)."""
        from PIL import Image

        path = shots / name
        d.save_screenshot(str(path))
        with Image.open(path) as img:
            small = img.convert("RGB").quantize(256)
        small.save(path, optimize=True)
        assert path.stat().st_size > 1000

    bravo_names = ("bravo_secret_model.py", "bravo-suite", seeded["jobs"]["bravo_secret_model.py"])
    job_id = seeded["jobs"]["linear_layernorm_residual.py"]

    # sign-in: an unauthenticated page leads there; the key goes in a POST, never a URL
    load("/ui/jobs", "login")
    assert d.current_url == url + "/ui/login"
    shot("login.png")
    d.find_element(By.ID, "api_key").send_keys("ko_not-a-key-" + "x" * 30)
    d.find_element(By.ID, "sign-in").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "p.error")))
    assert "not valid" in text() and d.current_url == url + "/ui/login"
    d.find_element(By.ID, "api_key").send_keys(seeded["alpha"]["key"])
    d.find_element(By.ID, "sign-in").click()
    wait.until(EC.url_to_be(url + "/ui/"))
    cookie = d.get_cookie("ko_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and seeded["alpha"]["key"] not in cookie["value"]
    assert d.execute_script("return document.cookie") == ""  # HttpOnly: not readable by scripts

    # overview
    load("/ui/", "overview")
    body = text()
    stats = httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {seeded['alpha']['key']}"}).json()
    assert stats["measured"] == 2 and stats["not_measured"] == 2, stats
    assert "Team alpha" in body and "linear_layernorm_residual.py" in body
    assert d.find_element(By.ID, "geomean").text == f"{stats['geomean_speedup']:.3f}×"  # measured jobs only
    assert d.find_element(By.ID, "gpu-minutes").text == f"{stats['gpu_seconds'] / 60:.1f}" == "12.5"
    assert "no-faster-candidate" in body and "no-gpu" in body
    tag_rows = {r.find_element(By.TAG_NAME, "th").text: [c.text for c in r.find_elements(By.TAG_NAME, "td")]
                for r in d.find_elements(By.CSS_SELECTOR, "#by-tag tbody tr")}
    assert tag_rows == {"nlp": ["2", "1", "1", "1.000×", "—", "5.0"],
                        "vision": ["2", "1", "0", "1.732×", "1.732×", "7.5"]}, tag_rows
    # the charts: server-drawn SVG, with their numbers in tables; LLM tokens from the one report recording them
    assert d.find_element(By.ID, "chart-speedups").get_attribute("role") == "img"
    assert d.find_element(By.ID, "chart-over-time").is_displayed()
    assert "Deployed speedup vs torch.compile of 2 measured jobs" in d.page_source
    assert d.find_element(By.ID, "llm-tokens").text == "7,168"
    prec = {r.find_element(By.TAG_NAME, "th").text: [c.text for c in r.find_elements(By.TAG_NAME, "td")]
            for r in d.find_elements(By.CSS_SELECTOR, "#by-precision tbody tr")}
    assert prec == {"strict": ["5", "2", "2", f"{1.7316 ** 0.5:.3f}×", "1.732×", "12.5"]}, prec
    assert not any(n in d.page_source for n in bravo_names)
    d.set_window_size(1280, min(2600, d.execute_script("return document.documentElement.scrollHeight") + 140))
    shot("overview.png")
    d.set_window_size(1280, 1000)

    # jobs table and its filters
    load("/ui/jobs", "jobs")
    body = text()
    for name in ("linear_layernorm_residual.py", "mlp_gelu.py", "softmax_kernel.py", "broken_model.py", "withdrawn.py"):
        assert name in body, name
    assert "not measured" in body and "1.73×" in body
    assert not any(n in d.page_source for n in bravo_names)
    shot("jobs.png")
    Select(d.find_element(By.ID, "f-outcome")).select_by_visible_text("fallback")
    d.find_element(By.ID, "f-tag").send_keys("nlp")
    d.find_element(By.CSS_SELECTOR, ".filters button").click()
    wait.until(EC.url_contains("outcome=fallback"))
    rows = d.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr")
    assert len(rows) == 2 and "linear_layernorm_residual.py" not in text(), text()

    # job page: timeline, outcome, precision, kernels, search tree, artifacts, the kernel diff; a download
    load(f"/ui/jobs/{job_id}", "job")
    body = text()
    assert "optimized" in body and "1.73×" in body and "strict (reduced precision accepted)" in body
    assert [r.text.split()[0] for r in d.find_elements(By.CSS_SELECTOR, "#timeline tr")] == \
        ["load", "compile", "decompose", "profile", "search", "verify"]
    assert "23.70 s" in body
    assert [c.text for c in d.find_elements(By.CSS_SELECTOR, "#kernels tbody th code")] == [
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize",
        "triton_red_fused_add_native_layer_norm_0"]
    assert "searched: no — too small" in d.find_element(By.ID, "kernels").text
    assert "fp32 emulated on tensor cores" in d.find_element(By.ID, "precision").text
    tree = d.find_element(By.CSS_SELECTOR, "section.tree")
    assert len(tree.find_elements(By.CSS_SELECTOR, "li.cand")) == 6
    assert "deployed: passed Gates 1–4" in tree.find_element(By.CSS_SELECTOR, "li.deployed").text
    assert len(tree.find_elements(By.CSS_SELECTOR, "li.rejected")) == 2
    assert [c.text for c in d.find_elements(By.CSS_SELECTOR, "table.sbs td.add")] == \
        ["    # num_warps=8, vectorized loads", "    xindex = xoffset + tl.arange(0, XBLOCK)"]
    links = {a.text: a for a in d.find_elements(By.CSS_SELECTOR, "#artifacts a")}
    assert set(links) == {"report.md", "report.json", "trajectory.jsonl", "diff__kernelopt_group_1.diff",
                          "optimized_module.py"}
    height = d.execute_script("return document.documentElement.scrollHeight")
    d.set_window_size(1280, min(3200, height + 140))  # the whole page, tree and diff included
    shot("job.png")
    d.set_window_size(1280, 1000)
    links["report.md"].click()
    deadline = time.monotonic() + 20
    while not (d.downloads / "report.md").is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (d.downloads / "report.md").read_bytes() == b"# linear_layernorm_residual: optimized 1.73x\n"

    # another team's job is a 404, its artifact too
    load(f"/ui/jobs/{seeded['jobs']['bravo_secret_model.py']}", "other-team job")
    assert "Not found" in text() and "bravo_secret" not in d.page_source
    load(f"/ui/jobs/{seeded['jobs']['bravo_secret_model.py']}/artifacts/report.md", "other-team artifact")
    assert "Not found" in text() and "bravo secret" not in d.page_source

    # phone-width layout
    d.set_window_size(390, 1000)
    load("/ui/", "overview (phone)")
    assert d.execute_script("return document.documentElement.scrollWidth") <= 400
    shot("overview-phone.png")
    load(f"/ui/jobs/{job_id}", "job (phone)")  # wide tables and the diff scroll inside their own boxes
    assert d.execute_script("return document.documentElement.scrollWidth") <= 400
    d.set_window_size(1280, 1000)

    # submit from the form: lands on the job page, whose status then changes without a reload
    load("/ui/submit", "submit")
    d.find_element(By.ID, "file").send_keys(str(KERNEL))
    d.find_element(By.ID, "time_budget_s").clear()
    d.find_element(By.ID, "time_budget_s").send_keys("240")
    d.find_element(By.ID, "tag").send_keys("from-the-form")
    shot("submit.png")
    d.find_element(By.ID, "submit-job").click()
    wait.until(EC.url_matches(r"/ui/jobs/[0-9a-f]{32}$"))
    new_id = d.current_url.rsplit("/", 1)[-1]
    first = d.find_element(By.CSS_SELECTOR, "#job-summary [data-field=status]").text
    assert first in ("queued", "running"), first
    d.execute_script("window.__noReload = 'job'")
    job_tab = d.current_window_handle
    d.switch_to.new_window("tab")  # the jobs table follows the same job, in another tab
    load("/ui/jobs", "jobs (live)")
    table_first = d.find_element(By.CSS_SELECTOR, f"tr[data-job='{new_id}'] [data-field=status]").text
    d.execute_script("window.__noReload = 'table'")
    table_tab = d.current_window_handle
    d.switch_to.window(job_tab)
    seen = [first]
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        st = d.find_element(By.CSS_SELECTOR, "#job-summary [data-field=status]").text
        if st != seen[-1]:
            seen.append(st)
            if st == "running":
                shot("job-running.png")
        if st in ("succeeded", "failed", "cancelled", "crashed"):
            break
        time.sleep(0.25)
    assert seen[-1] == "succeeded", (seen, log.read_text()[-3000:])
    assert len(seen) >= 2 and d.execute_script("return window.__noReload") == "job", seen
    assert d.find_element(By.CSS_SELECTOR, "#job-summary [data-field=outcome]").text == "fallback"
    assert d.find_element(By.CSS_SELECTOR, "#job-summary [data-field=speedup]").text == "not measured"
    d.switch_to.window(table_tab)
    WebDriverWait(d, 15).until(lambda drv: drv.find_element(
        By.CSS_SELECTOR, f"tr[data-job='{new_id}'] [data-field=status]").text == "succeeded")
    assert table_first in ("queued", "running") and d.execute_script("return window.__noReload") == "table"
    assert d.find_element(By.CSS_SELECTOR, f"tr[data-job='{new_id}'] [data-field=speedup]").text == "not measured"
    d.close()
    d.switch_to.window(job_tab)
    load(f"/ui/jobs/{new_id}", "job (finished)")
    assert "report.json" in text() and "from-the-form" in text()
    shot("job-finished.png")

    # sign-out ends the session, server-side: the old cookie, put back, is refused
    old_cookie = d.get_cookie("ko_session")
    d.find_element(By.ID, "sign-out").click()
    wait.until(EC.url_to_be(url + "/ui/login"))
    assert d.get_cookie("ko_session") is None
    load("/ui/", "after sign-out")
    assert d.current_url == url + "/ui/login"
    d.add_cookie({k: old_cookie[k] for k in ("name", "value", "path", "httpOnly", "sameSite")})
    assert d.get_cookie("ko_session")["value"] == old_cookie["value"]
    load("/ui/", "replayed cookie")
    assert d.current_url == url + "/ui/login"

    print("\npage timings (ms, request start to load event):")
    for name, ms in timings.items():
        print(f"  {name:24s} {ms:7.1f}")
    assert "ko_" not in log.read_text()
