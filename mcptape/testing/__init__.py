"""Tapes in test suites: the pytest plugin (plugin.py, loaded through the `pytest11` entry point), what a test's
tape does in each record mode (tapes.py), and what the client did, read back through the model (log.py)."""
