"""`web_search`: Codex's hosted web search, where a harness and wire can carry it.

Codex reads `web_search = "disabled" | "cached" | "live"` (and the older spellings
`[features] web_search_request = true` for live, `web_search_cached = true` for cached,
`[tools] web_search = true` for live) and sends the Responses API's hosted tool
`{"type": "web_search", "external_web_access": <live>, ...}`: cached answers from OpenAI's
index, live fetches pages. Only the Responses wire has hosted tools, and only a harness whose
product sends the tool (`hosted_web_search = true` in its manifest: native) sends it; anywhere
else the key has no effect, which `web_search_supported` tells the config report.
"""

from __future__ import annotations

from typing import Any, Literal

from oiexec.config.settings import Settings

__all__ = ["WebSearchMode", "hosted_tools", "web_search_mode", "web_search_supported"]

WebSearchMode = Literal["disabled", "cached", "live"]


def web_search_mode(settings: Settings) -> WebSearchMode | None:
    """The mode the config asks for, None when nothing sets it. `web_search` wins over the
    older feature and `[tools]` spellings, as in Codex."""
    if settings.web_search is not None:
        return settings.web_search
    features = settings.features
    if features.get("web_search_request") is True:
        return "live"
    if features.get("web_search_cached") is True:
        return "cached"
    legacy = settings.tools.get("web_search")
    if isinstance(legacy, bool):
        return "live" if legacy else "disabled"
    return None


def web_search_supported(harness_id: str, wire: str) -> bool:
    """Whether `web_search` takes effect for a run of this harness on this wire."""
    from oiexec.harness.data import load_spec

    return wire == "responses" and load_spec(harness_id).hosted_web_search


def hosted_tools(wire: str, mode: str | None) -> tuple[dict[str, Any], ...]:
    """The hosted tools a run on `wire` sends for `mode`: Codex's `web_search` on the
    Responses wire when search is cached or live, nothing otherwise."""
    if wire != "responses" or mode not in ("cached", "live"):
        return ()
    tool = {
        "type": "web_search",
        "external_web_access": mode == "live",
        "search_content_types": ["text", "image"],
    }
    return (tool,)
