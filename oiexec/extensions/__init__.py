"""What a run adds to the agent from config and disk, product-neutral: skills, hooks and the
`notify` command."""
