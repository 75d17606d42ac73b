"""A scripted model behind a server with a small context, refusing what does not fit with a local server's 400, and a model name of its own per test."""

from __future__ import annotations

import itertools
from typing import Any

from starlette.responses import Response

from runner.llm.budget import count_request_tokens
from runner.llm.fake import error, tool_of
from tests.support.llm import chunk_messages_of, scripted

CONTEXT = 8192


# The server's tokenizer counts more tokens than cl100k_base for the same text, as a llama
# tokenizer does: what digestd learns must account for it.
SERVER_TOKENS_PER_OURS = 1.08


_models = itertools.count()


def unique_model(kind: str) -> str:
    """A model name of its own per test: what a process learns is kept per endpoint and model."""
    return f"local-{kind}-{next(_models)}"


def overflow_body(wording: str, prompt: int, output: int) -> dict[str, Any]:
    """The 400 body each server sends for a request over its context."""
    if wording == "llama.cpp":
        return {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": CONTEXT,
            }
        }
    message = (
        f"This model's maximum context length is {CONTEXT} tokens. However, you requested "
        f"{prompt + output} tokens ({prompt} in the messages, {output} in the completion). "
        "Please reduce the length of the messages or completion."
    )
    if wording == "vllm":
        return {"object": "error", "message": message, "type": "BadRequestError", "code": 400}
    # OpenAI, and llama-cpp-python's server (it rewrites llama.cpp's error to this).
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


class SmallContextModel:
    """The scripted model behind a server with an 8,192-token context: a request whose prompt
    (in the server's tokens) plus `max_tokens` exceeds it is refused with `wording`'s 400."""

    def __init__(self, wording: str = "openai") -> None:
        self.wording = wording
        self.refused: list[int] = []  # server prompt tokens of each refused request
        self.accepted: list[dict[str, Any]] = []
        self._answer = scripted()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any] | Response:
        ours, _ = count_request_tokens(body["messages"], body["tools"])
        prompt = int(ours * SERVER_TOKENS_PER_OURS)
        output = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if prompt + output > CONTEXT:
            self.refused.append(prompt)
            return error(400, body=overflow_body(self.wording, prompt, output))
        self.accepted.append(body)
        answer: dict[str, Any] = self._answer(body)
        return answer

    def mapped_message_ids(self) -> set[str]:
        return {
            sent.message_id
            for body in self.accepted
            if tool_of(body) == "emit_chunk_summary"
            for sent in chunk_messages_of(body)
        }
