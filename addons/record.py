"""Record MCP traffic with mitmdump:  mitmdump -s "$(mcptape addons record)" --set mcptape_tape=run.mcptape"""

from mcptape.capture.mitm import Recorder

addons = [Recorder()]
