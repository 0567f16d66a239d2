"""mcptape: record, replay, edit and check MCP conversations."""

__version__ = "0.1.0"
TOOL = f"mcptape {__version__}"  # what tapes say wrote them


def __getattr__(name: str):
    # Loaded on first use (PEP 562): the stdio wrapper imports this package and must start without asyncio.
    if name == "verify":
        from .redrive import verify

        return verify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
