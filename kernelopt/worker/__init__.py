"""Queue and workers: run the engine's job for the service (Celery workers or the embedded dispatcher)."""
