"""mini-swe-agent 2.4: JSON observations in tool mode, tagged text in text mode."""

from __future__ import annotations

import json

from oiexec.tools.results import CommandRun, Result
from oiexec.tools.style import Style

#: Outputs this long or longer are shown as head and tail with the middle elided.
LIMIT = 10_000
HEAD = TAIL = 5_000
WARNING = (
    "The output of your last command was too long.\n"
    "Run a command that prints less: view parts of files with head, tail or sed -n, narrow "
    "grep or find patterns, or send the output to a file and search that file."
)


def _json(value: object) -> str:
    """A JSON value as mini-swe-agent's templates write it (Jinja's `tojson`: ASCII only,
    and the characters HTML cares about escaped)."""
    text = json.dumps(value)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, escaped)
    return text


class MiniStyle(Style):
    """Tool mode: each observation is a small JSON object (`returncode` and `output`, or head,
    tail and the elided count when the output reaches `LIMIT` characters)."""

    name = "mini"

    def observation(self, returncode: int, output: str, *, exception: str | None = None) -> str:
        if len(output) < LIMIT:
            fields = [f'  "returncode": {returncode},', f'  "output": {_json(output)}']
        else:
            fields = [
                f'  "returncode": {returncode},',
                f'  "output_head": {_json(output[:HEAD])},',
                f'  "output_tail": {_json(output[-TAIL:])},',
                f'  "elided_chars": {len(output) - HEAD - TAIL},',
                '  "warning": "Output too long."',
            ]
        if exception:
            fields[-1] += f', "exception_info": {_json(exception)}'
        return "{\n" + "\n".join(fields) + "\n}"

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        code = run.exit_code if run.exit_code is not None else -1
        exception = self.timeout_note(timeout_s) if run.timed_out else None
        return Result(self.observation(code, run.text, exception=exception))


class MiniTextStyle(MiniStyle):
    """Text mode (`mini-swe-agent-text`): `<returncode>`/`<output>` tags."""

    name = "mini-text"

    def observation(self, returncode: int, output: str, *, exception: str | None = None) -> str:
        parts: list[str] = []
        if exception:
            parts.append(f"<exception>{exception}</exception>")
        parts.append(f"<returncode>{returncode}</returncode>")
        if len(output) < LIMIT:
            parts.append(f"<output>\n{output}</output>")
        else:
            parts.append(
                f"<warning>\n{WARNING}\n</warning>"
                f"<output_head>\n{output[:HEAD]}\n</output_head>\n"
                f"<elided_chars>\n{len(output) - HEAD - TAIL} characters elided\n</elided_chars>\n"
                f"<output_tail>\n{output[-TAIL:]}\n</output_tail>"
            )
        return "\n".join(parts)
