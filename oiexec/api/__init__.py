"""The Python API: run, stream, resume and review from Python, on the CLI's runner.

    from oiexec import Agent

    agent = Agent(model="gpt-5.5", sandbox="workspace-write", cwd="/path/to/repo")
    thread = agent.start_thread()
    turn = thread.run("fix the failing test", max_turns=20, check="pytest -q")
    print(turn.exit_code, turn.final_response, turn.diff)

The names follow the Codex TypeScript SDK's (`Codex` is `Agent`, `startThread` is
`start_thread`, `finalResponse` is `final_response`, ...). Everything else in this package is
private.
"""

from oiexec.api.agent import Agent
from oiexec.api.options import ReasoningEffort, SandboxMode
from oiexec.api.results import ReviewResult, Turn
from oiexec.api.thread import Input, LocalImageInput, StreamedTurn, TextInput, Thread

__all__ = [
    "Agent",
    "Input",
    "LocalImageInput",
    "ReasoningEffort",
    "ReviewResult",
    "SandboxMode",
    "StreamedTurn",
    "TextInput",
    "Thread",
    "Turn",
]
