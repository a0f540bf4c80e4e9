"""mini-swe-agent: `<returncode>`/`<output>` observations."""

from __future__ import annotations

from oiexec.tools.results import CommandRun, Result
from oiexec.tools.style import Style

#: Outputs this long or longer are shown as head and tail with the middle elided.
LIMIT = 10_000
WARNING = (
    "The output of your last command was too long.\n"
    "Run a command that prints less: view parts of files with head, tail or sed -n, narrow "
    "grep or find patterns, or send the output to a file and search that file."
)


class MiniStyle(Style):
    name = "mini"

    def observation(
        self,
        returncode: int,
        output: str,
        *,
        exception: str | None = None,
        limit: int = LIMIT,
        head: int = 5_000,
        tail: int = 5_000,
    ) -> str:
        """A command's observation: return code and output, or head/tail with the elided
        character count when the output reaches `limit` characters."""
        parts: list[str] = []
        if exception:
            parts.append(f"<exception>{exception}</exception>")
        parts.append(f"<returncode>{returncode}</returncode>")
        if len(output) < limit:
            parts.append(f"<output>\n{output}</output>")
        else:
            elided = len(output) - head - tail
            parts.append(
                f"<warning>\n{WARNING}\n</warning>"
                f"<output_head>\n{output[:head]}\n</output_head>\n"
                f"<elided_chars>\n{elided} characters elided\n</elided_chars>\n"
                f"<output_tail>\n{output[-tail:] if tail else ''}\n</output_tail>"
            )
        return "\n".join(parts)

    # --- commands ----------------------------------------------------------------------------

    def command_result(self, run: CommandRun, *, timeout_s: float, max_chars: int) -> Result:
        code = run.exit_code if run.exit_code is not None else -1
        exception = self.timeout_note(timeout_s) if run.timed_out else None
        return Result(self.observation(code, run.text, exception=exception))

    # --- files -------------------------------------------------------------------------------
