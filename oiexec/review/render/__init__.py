"""Report formats for a review: Codex-style text, SARIF, JUnit, Markdown, GitHub Actions."""
