"""Harnesses: what one model family sees (prompt, tools, history rules, completion), built
from the data in `harnesses/<id>/`; everything product-specific, including each product's
wording of tool results (`harness.styles`), lives here."""
