"""The service's domain layer: settings, the job state machine, auth.

The API (api/), the workers (worker/) and the admin CLI all go through these
modules, so job state changes in exactly one place (service.jobs).
"""
