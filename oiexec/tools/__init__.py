"""Shared tool implementations; harnesses map model-facing names onto them."""
