"""Composing one run from the parts: `exec`, `review` and `interpreter sandbox`; settings,
sandbox, harness, provider, session and output are chosen here and handed to the loop."""
