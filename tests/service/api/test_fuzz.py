"""Schema-driven fuzzing: schemathesis generates requests from the app's own OpenAPI document
(authenticated, on both databases) and no response may be a 5xx. Valid and invalid data are
generated for every operation; each case runs once as generated and, when it has a `job_id`,
once more against a real finished job. Bounded: a few examples per operation, < 60 s in all.

(schemathesis's Python API with hypothesis directly: its pytest loader `from_fixture` does not
work with pytest 9.)
"""
from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from tests.service.api.conftest import ScriptedWorker

EXAMPLES_PER_OPERATION = int(__import__("os").environ.get("KERNELOPT_FUZZ_EXAMPLES", "20"))


def _operations(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_fuzz_finds_no_server_errors(api, mode):
    worker = ScriptedWorker(api)
    job = api.submit(b"x = 1\n").json()
    worker.run(job["id"], artifacts={"report.json": b"{}"})
    headers = api.headers()
    operations = _operations(api.app)
    assert len(operations) >= 10
    failures: list[str] = []
    seen: dict[str, int] = {}
    statuses: dict[str, dict[int, int]] = {}

    for operation in operations:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case):
            label = f"{case.method} {case.path}"
            seen[label] = seen.get(label, 0) + 1
            case_headers = {**headers, **(case.headers or {})}
            case_headers["Authorization"] = headers["Authorization"]
            response = case.call(headers=case_headers)
            statuses.setdefault(label, {}).setdefault(response.status_code, 0)
            statuses[label][response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}")
            case.validate_response(response, checks=[not_a_server_error])
            if case.path_parameters and "job_id" in case.path_parameters:
                case.path_parameters["job_id"] = job["id"]
                response = case.call(headers=case_headers)
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path} (real job) -> {response.status_code}")

        try:
            run()
        except Unsatisfiable:
            # nothing to make invalid (e.g. GET /healthz has no parameters)
            assert mode is GenerationMode.NEGATIVE, f"{operation.method} {operation.path}"
    print(f"\nfuzz ({mode.value}): status codes by operation: {statuses}")
    assert not failures, "\n".join(failures)
    if mode is GenerationMode.POSITIVE:
        assert len(seen) == len(operations), seen
    assert len(seen) >= 6, seen
