"""Provider wires: Responses, Chat Completions and Anthropic Messages over SSE, with retries.

`registry.create_client` gives the client of a provider's wire; a run imports only that wire.
"""
