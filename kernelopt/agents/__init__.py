"""LLM agents (docs/architecture.md, Agents): candidate generators that call an OpenAI-compatible endpoint.

They run on the trusted side of a job (the orchestrator, which runs no submitted
code): sandboxed children have no network and no credentials. Candidates travel
into the sandbox for the gates; gate results travel back here.
"""
