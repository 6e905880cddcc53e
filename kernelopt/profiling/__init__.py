"""Stages 4-5: timing, baseline profile and strategy analysis."""
