"""The team dashboard: server-rendered pages under /ui (issue 11)."""
