"""Persistence: SQLAlchemy models, engines/sessions, the content-addressed blob store.

The schema itself is owned by the Alembic migrations in migrations/; the models
here must match them (tests/service/test_migrations.py checks that).
"""
