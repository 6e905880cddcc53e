"""Candidate generators by name: the job's `generators` option picks from here."""
from __future__ import annotations

from search.generator import CandidateGenerator


def make_generator(name: str) -> CandidateGenerator:
    if name == "launch_config":
        from search.launch_config import LaunchConfigGenerator

        return LaunchConfigGenerator()
    raise ValueError(f"unknown generator {name!r}; available: {', '.join(available())}")


def available() -> list[str]:
    return ["launch_config"]
