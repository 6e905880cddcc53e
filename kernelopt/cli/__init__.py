"""The `kernelopt` command: thin front ends over the engine (and, later, the service)."""
