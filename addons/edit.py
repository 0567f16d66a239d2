"""mitmdump -s "$(mcptape addons edit)" --set mcptape_edit='expire-session at=tools/call#2' [--set mcptape_tape=…]

Live edits: the same addon as `record` (recording and editing share every hook); load one of the two scripts."""

from mcptape.capture.mitm import Recorder

addons = [Recorder()]
