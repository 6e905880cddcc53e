"""The agents' prompt files (agents/prompts/*.md), filled in by name."""
from __future__ import annotations

from pathlib import Path

PROMPTS = Path(__file__).resolve().parent / "prompts"


def prompt(name: str, **values: str) -> str:
    """agents/prompts/<name>.md with each {{key}} replaced (kernel sources hold braces: no str.format)."""
    text = (PROMPTS / f"{name}.md").read_text()
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text
