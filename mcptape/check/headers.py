"""2026-07-28's standard headers: a client repeats the request's method, name and chosen tool arguments in HTTP
headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-{Name}`) and its protocol version in both `MCP-Protocol-Version` and
`_meta`. Values that are not plain header-safe ASCII travel as `=?base64?…?=` and are compared decoded, as the
spec tells servers to; a value that cannot be decoded is its own finding (`header-encoding`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model import STATELESS, Call, Model, Observer, Seen
from ..tape import records
from ..wire import header_value, http
from ..wire.header_value import quote
from . import spec
from .finding import Finding, about_record

NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}  # method -> the param Mcp-Name repeats
PARAM_PREFIX = "mcp-param-"
_TOOLS_KEPT = 4096  # tools whose x-mcp-header annotations are remembered (bounded: a hostile tools/list is long)


class StandardHeaders(Observer):
    """Each 2026-07-28 request's headers against its body. `Mcp-Param-*` headers are compared with the arguments
    the tool's `inputSchema` (from a `tools/list` answer in the tape) marks with `x-mcp-header`; with no schema
    seen they are only checked for their encoding."""

    kinds = frozenset({records.HTTP_REQUEST})

    def __init__(self) -> None:
        self.mirrored: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}  # tool -> {lower: (name, path)}

    def call(self, call: Call, model: Model) -> None:
        if call.method == "tools/list" and call.session.transport == STATELESS and isinstance(call.response, dict):
            result = call.response.get("result")
            tools = result.get("tools") if isinstance(result, dict) else None
            for tool in tools if isinstance(tools, list) else ():
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    if len(self.mirrored) >= _TOOLS_KEPT and tool["name"] not in self.mirrored:
                        break
                    self.mirrored[tool["name"]] = mirrored_arguments(tool.get("inputSchema"))

    def record(self, seen: Seen, model: Model) -> list[Finding] | None:
        msg = seen.msg
        if (seen.session is None or seen.session.transport != STATELESS or seen.exchange is None
                or not isinstance(msg, dict) or not isinstance(msg.get("method"), str)):
            return None
        found = []
        for rule, problem, clause in self._problems(seen.exchange.headers, msg, seen.exchange.version_header):
            found.append(about_record(rule, "error", seen, problem, clause, msg["method"], msg.get("id"), records.C2S))
        return found

    def _problems(self, headers: list, msg: dict, version_header: str | None) -> Iterator[tuple[str, str, str]]:
        method = msg["method"]
        if (sent := http.get(headers, "mcp-method")) != method:
            yield ("header-mismatch", f"Mcp-Method {quote(sent)} but the body says {quote(method)}",
                   spec.HEADERS_2026)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if method in NAMED:
            name = params.get(NAMED[method])
            sent = http.get(headers, "mcp-name")
            try:
                decoded = None if sent is None else header_value.decode(sent)
            except header_value.EncodingError as e:
                yield "header-encoding", f"Mcp-Name {e}", spec.HEADER_ENCODING
            else:
                if decoded != name:
                    said = quote(sent) if decoded == sent else f"{quote(sent)} (decoded {quote(decoded)})"
                    yield "header-mismatch", f"Mcp-Name {said} but the body says {quote(name)}", spec.HEADERS_2026
        yield from self._params(headers, method, params)
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get("io.modelcontextprotocol/protocolVersion")
        if version is not None and version != version_header:
            yield ("header-mismatch", f"MCP-Protocol-Version {quote(version_header)} but _meta says {quote(version)}",
                   spec.HEADERS_2026)

    def _params(self, headers: list, method: str, params: dict) -> Iterator[tuple[str, str, str]]:
        sent = {k.lower(): (k, v) for k, v in headers if k.lower().startswith(PARAM_PREFIX)}
        decoded: dict[str, str] = {}
        for key, (name, value) in sent.items():
            try:
                decoded[key] = header_value.decode(value)
            except header_value.EncodingError as e:
                yield "header-encoding", f"{name} {e}", spec.HEADER_ENCODING
        tool = params.get("name")
        mirrored = self.mirrored.get(tool) if method == "tools/call" and isinstance(tool, str) else None
        if not mirrored:
            return  # no schema seen for this tool: which argument a header mirrors is not known
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        for key, (header, path) in mirrored.items():
            value = _at(arguments, path)
            key = PARAM_PREFIX + key
            if value is None:
                continue  # absent or null: the client omits the header, and the server must not expect it
            if key not in sent:
                yield ("header-mismatch", f"no Mcp-Param-{header} header but the body has {'.'.join(path)} = "
                       f"{quote(value)}", spec.PARAM_HEADERS_2026)
            elif key in decoded and not _same(decoded[key], value):
                yield ("header-mismatch", f"{sent[key][0]} {quote(sent[key][1])} but the body has {'.'.join(path)} = "
                       f"{quote(value)}", spec.PARAM_HEADERS_2026)


def mirrored_arguments(schema: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The arguments a tool's `inputSchema` mirrors into headers: header name in lower case -> (its name, the
    chain of `properties` keys leading to the argument). Only chains of `properties` count, as the spec says."""
    found: dict[str, tuple[str, tuple[str, ...]]] = {}
    stack: list[tuple[tuple[str, ...], Any]] = [((), schema)]
    while stack and len(found) < 64:
        path, node = stack.pop()
        if not isinstance(node, dict) or len(path) > 16:
            continue
        if path and isinstance(node.get("x-mcp-header"), str):
            found[node["x-mcp-header"].lower()] = (node["x-mcp-header"], path)
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend(((*path, key), sub) for key, sub in list(properties.items())[:256])
    return found


def _at(arguments: dict, path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _same(header: str, value: Any) -> bool:
    """Header and body agree, by the spec's type conversion; integers compare numerically."""
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int):
        try:
            return float(header) == value
        except ValueError:
            return False
    return header == str(value)
