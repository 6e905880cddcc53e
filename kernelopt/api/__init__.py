"""The REST API (FastAPI, versioned /v1): submit, follow and fetch jobs; it only stores bytes and enqueues."""
