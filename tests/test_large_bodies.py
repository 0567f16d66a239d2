"""An 80 MB request body through the recorder (the real `mcptape record`, mitmproxy, a real upstream): it reaches
the server unchanged, the recorder streams it instead of holding it (resident memory sampled), and the tape reads
with default limits, keeping the body's size, SHA-256 and a redacted first part, with a problem saying so."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import threading
import time
from urllib.parse import urlsplit

from mcptape.tape.file import read

from .conftest import start_recording
from .hostile_inputs import resident_kb

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"
HEAD = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upload","arguments":{"api_key":"'
        f'{SECRET}","blob":"').encode()
TAIL = b'"}}}'


def body_parts(size: int):
    yield HEAD
    piece = b"x" * (1 << 20)
    for _ in range(size // len(piece)):
        yield piece
    yield b"x" * (size % len(piece)) + TAIL


class Upstream(http.server.ThreadingHTTPServer):
    """Reads each POST's body as it comes, hashing it, and answers a JSON-RPC result."""

    def __init__(self) -> None:
        self.got: list[tuple[int, str]] = []

        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                left, digest = int(self.headers["content-length"]), hashlib.sha256()
                size = left
                while left:
                    chunk = self.rfile.read(min(left, 1 << 20))
                    digest.update(chunk)
                    left -= len(chunk)
                server.got.append((size, digest.hexdigest()))
                answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


def test_an_80_mb_request_body_is_streamed_through_and_recorded_cut(tmp_path):
    upstream = Upstream()
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    size = 80_000_000
    digest, length = hashlib.sha256(), 0
    for part in body_parts(size):
        digest.update(part)
        length += len(part)
    tape = tmp_path / "big.mcptape"
    rec = start_recording(f"http://127.0.0.1:{upstream.server_address[1]}/mcp", tape)
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], resident_kb(rec.proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        url = urlsplit(rec.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        conn.request("POST", url.path, body=body_parts(size),
                     headers={"content-type": "application/json", "accept": "application/json, text/event-stream",
                              "content-length": str(length)})
        response = conn.getresponse()
        assert response.status == 200 and b'"result"' in response.read()
    finally:
        done.set()
        sampler.join()
        code, _, err = rec.stop()
        upstream.shutdown()
    assert upstream.got == [(length, digest.hexdigest())]  # the server got the request unchanged
    assert peak[0] / 1024 < 300, f"the recorder peaked at {peak[0] / 1024:.0f} MB"
    records = read(tape).records  # default limits
    request = next(r for r in records if r["kind"] == "http.request")
    assert request["size"] == length and request["sha256"] == digest.hexdigest() and "msg" not in request
    assert "SHA-256" in request["problem"] and len(request["raw"]) < 70_000
    assert request["raw"].startswith(HEAD[:60]) and SECRET.encode() not in request["raw"]  # redacted like any body
    assert b"<redacted:" in request["raw"]
    response_record = next(r for r in records if r["kind"] == "http.response")
    assert response_record["msg"]["result"] == {"content": []}
