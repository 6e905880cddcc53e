"""Alembic migrations of the service database (package data: installed with KernelOPT)."""
