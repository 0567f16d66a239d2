"""The mitmproxy adapters of the recorder: the addon (addon.py) that turns flows into records through the sans-I/O
capture (capture/http.py), what it reads of a flow (flows.py), the stream callables it puts on flows (taps.py), where
its records go (sink.py), mitmproxy run in-process for `mcptape record` (proxy.py), and the MCP content view for
mitmweb (mcp_view.py). Only this folder imports mitmproxy; `mitmdump -s addons/record.py` loads Recorder from here."""

from .addon import Recorder

__all__ = ["Recorder"]
