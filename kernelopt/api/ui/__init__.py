"""The team dashboard: server-rendered pages under /ui (docs/usage.md)."""
