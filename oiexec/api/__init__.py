"""The Python API: run, stream, resume and review from Python, on the CLI's runner."""
