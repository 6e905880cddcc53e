"""Job options are validated once, by one model at the API boundary, identically on PostgreSQL
and SQLite (the `api` fixture runs on both): a bad option is a 422 naming the field, and
nothing is stored or queued."""
from __future__ import annotations

import json
from dataclasses import fields

import pytest

from tests.service.api.test_live_http import run_submit

BAD = [
    # the cases: accepted on SQLite (NaN disabled the budget), a database error on PostgreSQL ...
    ('{"time_budget_s": NaN}', "time_budget_s"),
    ('{"time_budget_s": Infinity}', "time_budget_s"),
    ('{"gamma": NaN}', "gamma"),
    ('{"gamma": -Infinity}', "gamma"),
    ('{"gamma": 1e999}', "gamma"),  # json.loads makes it inf
    # ... or silently accepted and ignored
    ('{"seeds": []}', "seeds"),
    ('{"iterations": -3}', "iterations"),
    ('{"device": "quantum"}', "device"),
    ('{"generators": ["nope"]}', "generators"),
    # the same family
    ('{"rho_max": NaN}', "rho_max"),
    ('{"time_budget_s": 0}', "time_budget_s"),
    ('{"time_budget_s": null}', "time_budget_s"),
    ('{"gamma": 0.99}', "gamma"),
    ('{"generators": []}', "generators"),
    ('{"generators": ["launch_config", "launch_config"]}', "generators"),
    ('{"seeds": [1, -2]}', "seeds"),
    ('{"seeds": [1, 2.5]}', "seeds"),
    ('{"seeds": [true]}', "seeds"),
    ('{"iterations": 0}', "iterations"),
    ('{"iterations": 1e3}', "iterations"),
    ('{"beam_width": 0}', "beam_width"),
    ('{"plans_per_iteration": -1}', "plans_per_iteration"),
    ('{"max_candidates_per_kernel": 10000000000}', "max_candidates_per_kernel"),
    ('{"dtype": "int8"}', "dtype"),
    ('{"precision": "loose"}', "precision"),
    ('{"bogus_option": 1}', "bogus_option"),
]


@pytest.mark.parametrize("options, field", BAD, ids=[b[0] for b in BAD])
def test_bad_option_is_422_naming_the_field_and_stores_nothing(api, options, field):
    blobs, jobs = api.count_blobs(), api.count_jobs()
    r = api.submit(options=options)
    assert r.status_code == 422, r.text
    body = r.json()
    assert f"`{field}" in body["detail"], body
    assert field in [e["field"].split("[")[0] for e in body["errors"]], body
    assert "\n" not in body["detail"]
    assert (api.count_blobs(), api.count_jobs()) == (blobs, jobs)
    assert api.dispatcher.enqueued == []


def test_every_bad_option_is_named_at_once(api):
    r = api.submit(options='{"seeds": [], "gamma": NaN, "device": "quantum"}')
    assert r.status_code == 422
    assert {e["field"] for e in r.json()["errors"]} == {"seeds", "gamma", "device"}


def test_generators_are_the_engines_registry(api):
    from kernelopt.search.registry import available

    for name in available():
        assert api.submit(options=f'{{"generators": ["{name}"]}}').status_code == 202
    r = api.submit(options='{"generators": ["nope"]}')
    assert r.status_code == 422 and ", ".join(available()) in r.json()["detail"]


def test_good_options_become_the_engines_options_on_both_databases(api):
    from kernelopt.pipeline.options import JobOptions

    given = {"gamma": 1.1, "seeds": [7, 8], "device": "interpreter", "time_budget_s": 60, "iterations": 2,
             "precision": "tf32", "dtype": "bf16"}
    r = api.submit(options=json.dumps(given))
    assert r.status_code == 202, r.text
    stored = r.json()["options"]
    assert stored == JobOptions(**given).to_dict()
    # and read back from the database, unchanged
    got = api.client.get(f"/v1/jobs/{r.json()['id']}", headers=api.headers()).json()["options"]
    assert got == stored
    assert api.submit(options="{}").json()["options"] == JobOptions().to_dict()


def test_api_model_matches_the_engines_options():
    """One field for each of pipeline.options.JobOptions, with the engine's defaults."""
    from kernelopt.api.options import JobOptionsIn
    from kernelopt.pipeline.options import JobOptions

    assert set(JobOptionsIn.model_fields) == {f.name for f in fields(JobOptions)}
    assert JobOptionsIn().to_engine() == JobOptions()
    assert JobOptionsIn.model_validate({}).model_dump() == JobOptions().to_dict()


def test_submit_cli_prints_the_422_as_one_line(api, live, tmp_path, monkeypatch, capsys):
    problem = tmp_path / "k.py"
    problem.write_text("x = 1\n")
    code = run_submit([str(problem), "--options", '{"seeds": [], "time_budget_s": 1e999}'], live.url, api.key,
                      monkeypatch)
    captured = capsys.readouterr()
    assert code == 7
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("kernelopt submit: invalid options:"), lines
    assert "`seeds`" in lines[0] and "`time_budget_s`" in lines[0] and "422" in lines[0]
    assert api.count_jobs(api.team.id) == 0


def test_dashboard_submit_form_uses_the_same_model(api):
    """The /ui submit form goes through the same options model: a NaN budget is refused there too."""
    from tests.service.api.test_ui import csrf_of, sign_in

    c = api.client
    sign_in(c, api.key)
    token = csrf_of(c.get("/ui/submit").text)
    files = {"file": ("form_kernel.py", b"print('k')\n", "text/x-python")}
    for budget in ("nan", "inf", "-5"):
        r = c.post("/ui/submit", data={"time_budget_s": budget, "csrf": token}, files=files)
        assert r.status_code == 422 and "time_budget_s" in r.text, (budget, r.text[:300])
    assert api.count_jobs(api.team.id) == 0
