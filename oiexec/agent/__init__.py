"""The agent loop: request, run the tool calls, repeat until the harness says the run is
complete; and the final answer checked against `--output-schema`. Knows only the seams in
`oiexec.core`."""
