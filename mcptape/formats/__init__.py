"""Other tools' files, both directions: a tape out as HAR 1.2 (har.py), as a mitmproxy flow file (flowfile.py) or as
a bug-report zip (bundle.py); a HAR or a flow file in as records (imported.py)."""
