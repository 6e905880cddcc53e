"""Exact graph rewrites: general algebraic identities applied to the ATen graph before Inductor compiles it.

`catalogue.py` lists the identities (each with the conditions under which it holds, checked on the graph),
`stage.py` applies them to a graph and says what changed, `fx.py` holds the graph helpers they share.
"""
