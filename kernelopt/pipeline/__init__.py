"""One optimization job: the stages in order (docs/architecture.md, Stages), with artifacts and events."""
