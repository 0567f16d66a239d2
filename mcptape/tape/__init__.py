"""The tape: its file format (file.py), its record kinds (records.py) and their fields
(shapes.py), and its JSON form (json_form.py).

Nothing here knows about sockets, mitmproxy, asyncio or click.
"""
