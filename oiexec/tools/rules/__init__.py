"""Command rules: Codex's `.rules` files (`prefix_rule(...)`), read without running them,
and the check every model command passes before it starts."""
