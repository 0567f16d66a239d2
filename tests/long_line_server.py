"""A stdio "server" that answers with one long line: `python long_line_server.py BYTES [newline|no-newline]`.
The line is a JSON-RPC result whose text is BYTES long, written in 64 KB pieces (the server holds none of it), then
a short line after it (with `newline`), else nothing more: the stream ends mid-line."""

import sys

size, ended = int(sys.argv[1]), sys.argv[2] == "newline"
out = sys.stdout.buffer
out.write(b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"')
piece = b"x" * 65536
for _ in range(size // len(piece)):
    out.write(piece)
out.write(b"x" * (size % len(piece)))
out.write(b'"}]}}')
if ended:
    out.write(b'\n{"jsonrpc":"2.0","id":2,"result":{}}\n')
out.flush()
