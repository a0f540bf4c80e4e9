"""The manifest adapters: file tools, shells, background tasks, todos and `execute`.

Nothing is imported here: `oiexec.tools.table` names each implementation's module, and a run
imports only the modules of the tools it calls.
"""
