"""Where a run's results go: the human transcript and JSONL event processors, the final
diff, the JUnit report and the run log."""
