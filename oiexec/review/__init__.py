"""Code review: the structured result, its parsing, location checks, the gate and reports;
`oiexec.runner.review` runs the review and puts these together."""
