"""Capture: live traffic in, tape records out. http.py is the sans-I/O core; mitm.py adapts mitmproxy to it;
proxy.py runs mitmproxy in-process for `mcptape record`."""
