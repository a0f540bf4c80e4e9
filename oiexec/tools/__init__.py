"""Product-neutral tools: one framework of schema-checked implementations listed in one table
(`table`, with each one's options model in `options`), the command runner, the file tools and
the patch engine. No product names: results are worded by the `Style` a harness passes in."""
