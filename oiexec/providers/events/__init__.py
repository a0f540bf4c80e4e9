"""Each wire's SSE events read into typed models at the edge, and the parser that turns them
into a complete `ModelResponse`: `responses`, `chat`, `messages`; `base` holds what they
share (the wrong-shape error, the judgement of an error sent inside a stream)."""
