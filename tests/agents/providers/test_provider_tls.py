"""The providers' TLS: one context per process for every model client (making one loads
the CA bundle, ~30 ms of CPU per session and per subagent otherwise), and still one
that verifies: a server whose certificate nobody vouches for is refused before any
request reaches it."""

import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.providers.anthropic import AnthropicModelClient
from agents.providers.openai import OpenAIModelClient
from agents.settings._config import ProviderSettings
from cluster.terminal._cli import main
from tests.support.tls_support import self_signed_certificate


def _tls_context_of(model_client) -> ssl.SSLContext:
    """The SSLContext the client's connection pool would wrap its sockets with."""
    return model_client._client._client._transport._pool._ssl_context


def test_every_model_client_of_a_process_shares_one_verifying_tls_context():
    settings = ProviderSettings()
    contexts = [
        _tls_context_of(AnthropicModelClient("claude-sonnet-4-5", api_key="k", settings=settings)),
        _tls_context_of(AnthropicModelClient("claude-haiku-4-5", api_key="k", settings=settings)),
        _tls_context_of(OpenAIModelClient("gpt-4o", api_key="k", settings=settings)),
    ]
    assert all(context is contexts[0] for context in contexts)
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname


class _Counting(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self.requests.append(self.path)
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def self_signed_server(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """An HTTPS server on 127.0.0.1 with a certificate it signed itself."""
    cert, key = self_signed_certificate(tmp_path, "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    _Counting.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}", _Counting.requests
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_whose_certificate_is_not_trusted_is_refused_before_any_request(
    self_signed_server, tmp_path, monkeypatch, capsys
):
    url, requests = self_signed_server
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("WORKINGSET_PROVIDERS__MAX_RETRIES", "0")
    monkeypatch.setenv("WORKINGSET_PROVIDERS__STREAM_RETRIES", "0")
    code = main(["run", "hello", "--cwd", str(tmp_path), "--model", "anthropic:claude-sonnet-4-5", "--local"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err
    assert f"cannot reach {url}: its TLS certificate is not trusted" in captured.out.replace("\n", "")
    assert "SSL_CERT_FILE" in captured.out.replace("\n", "")
    assert requests == []  # the handshake failed: nothing was sent
