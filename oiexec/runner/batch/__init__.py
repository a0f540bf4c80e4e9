"""`interpreter batch`: many tasks, each in its own worktree and `interpreter exec` process,
run concurrently, resumable, sharded across machines, merged into one report."""
