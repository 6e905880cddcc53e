"""Stage 1: load a submission (model file or single-kernel file) and check it."""
