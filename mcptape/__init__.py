"""mcptape: record, replay, edit and check MCP conversations."""

__version__ = "0.1.0"
TOOL = f"mcptape {__version__}"  # what tapes say wrote them
