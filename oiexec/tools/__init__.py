"""Product-neutral tools: one framework of schema-checked, registered implementations, the
command runner, the file tools and the patch engine. No product names: results are worded by
the `Style` a harness passes in."""
