"""Capture: live traffic in, tape records out. http.py is the sans-I/O core; mitm/ adapts mitmproxy to it and runs
mitmproxy in-process for `mcptape record`; stdio.py wraps a stdio server; recording.py starts a recorder from a
program."""
