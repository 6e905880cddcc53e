"""Stage 6: search for faster versions of a kernel with pluggable candidate generators."""
