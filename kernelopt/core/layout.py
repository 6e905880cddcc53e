"""The package's subpackages, in layer order: a subpackage imports only those before it (and itself).

The one written list of them; the engine fingerprint (pipeline/provenance.py), the reply decoder
(isolation/safe_pickle.py) and the tests that check the layering and the docs read it from here.
"""
from __future__ import annotations

#: the engine: what decides an outcome or a timing, from shared vocabulary up to the job's orchestration
ENGINE_PACKAGES: tuple[str, ...] = ("core", "isolation", "load", "compiled", "rewrite", "profiling", "verify", "kernels",
                                    "search", "agents", "pipeline")
#: the service around it: storage, queue, API, command line, schema migrations
SERVICE_PACKAGES: tuple[str, ...] = ("storage", "service", "worker", "api", "cli", "migrations")
#: every subpackage, lowest layer first
PACKAGES: tuple[str, ...] = ENGINE_PACKAGES + SERVICE_PACKAGES
