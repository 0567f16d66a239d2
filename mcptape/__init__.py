"""mcptape: record, replay, edit and check MCP conversations.

The library's entry points are loaded on first use (PEP 562), so `import mcptape` stays as cheap as the stdio
wrapper and the pytest plugin need it to be:

    mcptape.replaying(tape, edits=[...])       a tape served over HTTP in a thread; yields the URL
    mcptape.areplaying(tape, ...)              the same on the running event loop (async with)
    mcptape.recording(tape, upstream=URL)      `mcptape record` in front of a server; yields the URL to use
    mcptape.recording(tape, command=[...])     yields the argv that starts the stdio server through the recorder
    mcptape.verify(tape, upstream=URL)         re-drives a live server with the tape's client side; a Result
"""

__version__ = "0.1.0"
TOOL = f"mcptape {__version__}"  # what tapes say wrote them

_LAZY = {"replaying": "mcptape.replay", "areplaying": "mcptape.replay", "recording": "mcptape.capture.recording",
         "verify": "mcptape.redrive"}  # loaded on first use (PEP 562): the stdio wrapper must start without asyncio


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcptape' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
