"""`--max-tokens` and `--max-cost`: what this invocation has spent, checked after every model
response (the compaction's summary requests included, since they are billed too).

The usage counted is this invocation's only, not the thread's: a resumed session starts its
budget at zero, as `--max-turns` counts only this invocation's requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from oiexec.core.errors import MaxCostExceeded, MaxTokensExceeded
from oiexec.core.events import ModelPrice, Usage

__all__ = ["Budget"]


@dataclass
class Budget:
    #: Input + output tokens this invocation may use (None = unlimited).
    max_tokens: int | None = None
    #: USD this invocation may cost, priced with `price` (None = unlimited).
    max_cost: float | None = None
    price: ModelPrice | None = None
    #: What this invocation has used so far.
    spent: Usage = field(default_factory=Usage)

    def charge(self, usage: Usage) -> None:
        """Adds one response's usage; raises when a budget is now exceeded."""
        self.spent = self.spent.plus(usage)
        tokens = self.spent.input_tokens + self.spent.output_tokens
        if self.max_tokens is not None and tokens > self.max_tokens:
            raise MaxTokensExceeded(
                f"token limit reached: the run used {tokens:,} tokens (input + output), "
                f"more than --max-tokens {self.max_tokens}"
            )
        if self.max_cost is None:
            return
        if self.price is None:
            # The runner refuses --max-cost without a price; a caller that skipped it must not
            # get an unenforced budget.
            raise MaxCostExceeded("--max-cost was given but the model has no known price")
        cost = self.price.cost(self.spent)
        if cost > self.max_cost:
            raise MaxCostExceeded(
                f"cost limit reached: the run cost ${cost:.4f} "
                f"({tokens:,} tokens at ${self.price.input_per_mtok:g} input / "
                f"${self.price.output_per_mtok:g} output per million), "
                f"more than --max-cost {self.max_cost:g}"
            )
