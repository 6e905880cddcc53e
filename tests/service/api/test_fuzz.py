"""Schema-driven fuzzing: schemathesis generates requests from the app's own OpenAPI document
(authenticated, on both databases) and no response may be a 5xx. Bounded: a few examples per
operation, well under a minute in all."""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.service.api.conftest import ScriptedWorker


@pytest.fixture
def api_schema(api):
    # A finished job with an artifact, so generated requests also reach existing resources.
    worker = ScriptedWorker(api)
    job = api.submit(b"x = 1\n").json()
    worker.run(job["id"], artifacts={"report.json": b"{}"})
    api.app.state.fuzz_job_id = job["id"]
    return schemathesis.openapi.from_asgi("/openapi.json", api.app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_server_errors(case, api):
    headers = api.headers()
    response = case.call(headers=headers)
    assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text}"
    case.validate_response(response, checks=[not_a_server_error])
    if case.path_parameters and "job_id" in case.path_parameters:
        case.path_parameters["job_id"] = api.app.state.fuzz_job_id
        response = case.call(headers=headers)
        assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}"
