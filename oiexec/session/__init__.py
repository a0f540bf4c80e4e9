"""Sessions: the append-only rollout of each thread and the index `resume` reads."""
