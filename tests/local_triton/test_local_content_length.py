"""The local endpoint reads Content-Length as ASCII digits within bounds: no handler traceback."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from triton_mme.client.triton_routes import SageMakerRoutes
from triton_mme.local_triton.loader import ModelCache
from triton_mme.local_triton.proxy import LocalEndpoint


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[LocalEndpoint]:
    (tmp_path / "models").mkdir()
    routes = SageMakerRoutes(lambda timeout_s: http.client.HTTPConnection("127.0.0.1", 1))
    cache = ModelCache(
        models_dir=tmp_path / "models", scratch_dir=tmp_path / "scratch", routes=routes, budget=1,
        report=lambda _: None,
    )  # fmt: skip
    server = LocalEndpoint(cache, port=0, ping=lambda: True)
    server.start_in_background()
    yield server
    server.stop()


def _header_bytes(text: str) -> bytes:
    """As http.server decodes headers (ISO-8859-1): b"\\xb2" arrives as "²", which str.isdigit() accepts."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode()


@pytest.mark.parametrize(
    "length",
    ["²", "٣", "+5", "-1", "1" * 401, "9" * 5000, "1e3"],
    ids=["superscript", "arabic-indic", "sign", "negative", "401-digits", "5000-digits", "exponent"],
)
def test_a_content_length_that_is_not_plain_digits_is_411(
    endpoint: LocalEndpoint, length: str, capfd: pytest.CaptureFixture[str]
) -> None:
    port = endpoint.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
            + _header_bytes(length)
            + b"\r\n\r\n"
        )
        response = http.client.HTTPResponse(connection)
        response.begin()
        assert response.status == 411
        assert json.loads(response.read()) == {"error": "Content-Length must be a number of bytes"}
    assert "Traceback" not in capfd.readouterr().err
