"""One optimization job: the stages of SPEC §2 in order, with artifacts and events."""
