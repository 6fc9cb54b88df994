"""What a provider adds to one streamed model call, against calling the SDK directly.

    python -m benchmarks.provider_overhead [--calls 40] [--reply-tokens 2000]

Both providers, each against its fake API server on 127.0.0.1 (agents.providers.testing:
real HTTP, real SSE, real SDKs), served from a child process so the server's work does
not share this process's interpreter lock. Per call
the server streams a reply of about `--reply-tokens` tokens: Anthropic-style text
deltas of ~4 tokens, OpenAI-style chunks of ~1 token, as those APIs send them.

    direct   the SDK's own streaming call, the events consumed and the text joined
    ours     the provider's `create`: request conversion, the streamed call under the
             stall guard and retry wrapper, the reply accumulated into typed blocks

Each call is timed twice: wall time, and this process's CPU time (the server runs in
another process, so CPU time is the client side alone, and far less disturbed by other
load on the machine than wall time). The difference of the medians is the provider's
overhead per call. Also reported: converting a
200-message conversation into each API's request (part of `ours`, paid once per call).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai

from agents.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from agents.ports import ModelRequest, ToolSchema
from agents.providers import AnthropicModelClient, OpenAIModelClient, to_anthropic_params, to_openai_params
from agents.settings import ProviderSettings

ROOT = Path(__file__).resolve().parents[1]
try:
    from agents.providers.testing import FakeMessagesServer, FakeOpenAIServer, ScriptedCompletion
except ImportError as exc:  # pragma: no cover - installed without the testing extra
    raise SystemExit(
        f"benchmarks.provider_overhead needs the fake servers' libraries ({exc}); pip install 'workingset[testing]'"
    ) from exc


def _serve(kind: str, tokens: int, replies: int) -> None:
    """In the child process: start the fake server, queue the replies, print its URL,
    serve until stdin closes."""
    text = reply_text(tokens)
    server = FakeMessagesServer() if kind == "anthropic" else FakeOpenAIServer()
    server.start()
    for _ in range(replies):
        if kind == "anthropic":
            server.push_text(text, usage={"output_tokens": tokens})
        else:
            server.push(ScriptedCompletion(text=text, chunk_chars=4, usage={"completion_tokens": tokens}))
    print(server.url, flush=True)
    sys.stdin.read()
    server.stop()


@contextlib.contextmanager
def served(kind: str, tokens: int, replies: int) -> Iterator[str]:
    child = subprocess.Popen(
        [
            sys.executable,
            "-W",
            "ignore",
            "-m",
            "benchmarks.provider_overhead",
            "--serve",
            kind,
            "--reply-tokens",
            str(tokens),
            "--replies",
            str(replies),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None  # both piped
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        child.wait(30)


PROSE = "The function returns the sum of both arguments after validating them. "


Sample = tuple[float, float]  # (wall ms, cpu ms)


def reply_text(tokens: int) -> str:
    chars = tokens * 4
    return (PROSE * (chars // len(PROSE) + 1))[:chars]


def request() -> ModelRequest:
    return ModelRequest(
        system="You are a coding agent.",
        tools=(ToolSchema(name="Read", description="Read a file", input_schema={"type": "object"}),),
        messages=(Message.user("Explain calc.py."),),
        max_tokens=4096,
    )


def long_request(size: int = 200) -> ModelRequest:
    messages = [Message.user("Investigate the failing test.")]
    for n in range(size // 2):
        use = ToolUseBlock(id=f"toolu_{n}", name="Read", input={"path": f"src/m{n}.py"})
        messages.append(Message.assistant(TextBlock(text=f"Reading m{n}."), use))
        messages.append(Message.tool_results([ToolResultBlock(tool_use_id=use.id, content="x = 1\n" * 300)]))
    return ModelRequest(system="sys", tools=request().tools, messages=tuple(messages), max_tokens=4096)


def _anthropic_sides(url: str, size: int):
    params = {**to_anthropic_params(request(), "claude-sonnet-4-5"), "stream": True}
    sdk = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
    ours = AnthropicModelClient("claude-sonnet-4-5", api_key="k", base_url=url, settings=ProviderSettings())

    async def direct() -> None:
        parts = []
        async for event in await sdk.messages.create(**params):
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        assert len("".join(parts)) == size

    return direct, ours, sdk.close


def _openai_sides(url: str, size: int):
    params = to_openai_params(request(), "fake-model")
    sdk = openai.AsyncOpenAI(api_key="k", base_url=f"{url}/v1", max_retries=0)
    ours = OpenAIModelClient("fake-model", api_key="k", base_url=f"{url}/v1", settings=ProviderSettings())

    async def direct() -> None:
        parts = []
        async for chunk in await sdk.chat.completions.create(**params):
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        assert len("".join(parts)) == size

    return direct, ours, sdk.close


async def measure(kind: str, calls: int, tokens: int) -> tuple[list[Sample], list[Sample]]:
    size = len(reply_text(tokens))
    with served(kind, tokens, 2 * calls + 2) as url:
        direct, ours, close_sdk = (_anthropic_sides if kind == "anthropic" else _openai_sides)(url, size)

        async def provider() -> None:
            response = await ours.create(request())
            assert len(response.content[0].text) == size

        try:
            return await _interleaved(direct, provider, calls)
        finally:
            await close_sdk()
            await ours.aclose()


async def _interleaved(direct, provider, calls: int) -> tuple[list[Sample], list[Sample]]:
    """Alternate the two so drift on a shared machine hits both alike (after one warm-up
    call each, which opens the connection)."""
    await direct()
    await provider()
    a: list[Sample] = []
    b: list[Sample] = []
    for _ in range(calls):
        a.append(await _timed_once(direct))
        b.append(await _timed_once(provider))
    return a, b


async def _timed_once(fn) -> Sample:
    wall, cpu = time.perf_counter(), time.process_time()
    await fn()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def _conversion_ms(fn, repeats: int = 50) -> float:
    big = long_request()
    started = time.perf_counter()
    for _ in range(repeats):
        fn(big)
    return (time.perf_counter() - started) * 1000 / repeats


def _line(name: str, direct: list[Sample], ours: list[Sample]) -> str:
    parts = []
    for label, k in (("cpu", 1), ("wall", 0)):
        d = statistics.median(x[k] for x in direct)
        o = statistics.median(x[k] for x in ours)
        parts.append(
            f"{label}: direct {d:7.2f} ms · ours {o:7.2f} ms · overhead {o - d:+6.2f} ms ({(o - d) / d * 100:+.1f} %)"
        )
    return f"{name:<10} " + "\n           ".join(parts)


async def main(calls: int, tokens: int) -> None:
    print(f"{calls} streamed calls per side, reply ≈ {tokens} tokens; medians per call")
    for kind in ("anthropic", "openai"):
        direct, ours = await measure(kind, calls, tokens)
        print(_line(kind, direct, ours))
    print(
        f"request conversion, 200 messages: anthropic {_conversion_ms(lambda r: to_anthropic_params(r, 'm')):.2f} ms · "
        f"openai {_conversion_ms(lambda r: to_openai_params(r, 'm')):.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--reply-tokens", type=int, default=2000)
    parser.add_argument("--serve", choices=["anthropic", "openai"], help=argparse.SUPPRESS)
    parser.add_argument("--replies", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(args.serve, args.reply_tokens, args.replies)
    else:
        asyncio.run(main(args.calls, args.reply_tokens))
