"""MCP servers as tool sources: the client side of the Model Context Protocol (the official
`mcp` SDK), product-neutral."""
