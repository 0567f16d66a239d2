"""`dead-id-reuse`: an id the server handed out in one session (a thread or conversation id), sent again in a later
session or tape and refused as not found: it died with the session or process that issued it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..model import Call, Model, Observer, Recent
from ..tape import records
from . import spec
from .rules import Finding, about_call


def _is_id_key(key: str) -> bool:
    """id, thread_id, conversationId, sessionID: a key that names an id (str methods: this runs per result)."""
    return key == "id" or key.endswith(("_id", "Id", "ID"))
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_NOT_FOUND = re.compile(r"not found|unknown|no such|expired|does not exist", re.IGNORECASE)


class DeadIds(Observer):
    """Seed 002: a thread or conversation id handed out by the server in one session, sent again in a later
    session (or tape) and refused as not found: the id died with the session or process that issued it."""

    def __init__(self) -> None:
        # value -> (tape, session label, record) of the ids issued last (not all: memory stays flat in tape size)
        self.issued = Recent(20_000)

    def call(self, call: Call, model: Model) -> list[Finding] | None:
        response = call.response
        if call.dir != records.C2S or call.method != "tools/call" or not isinstance(response, dict):
            return None
        result = response.get("result")
        if "error" in response or (isinstance(result, dict) and result.get("isError")):
            return self._refused(call)
        if isinstance(result, dict):
            self._issued(result, call)
        return None

    def _issued(self, result: dict, call: Call) -> None:
        """Remember the ids a tool result hands out: string values of id-named keys in structuredContent, UUIDs in
        its text. Runs for every tool result, so it is plain loops (no generator, no list)."""
        structured = result.get("structuredContent")
        if isinstance(structured, dict):
            for key, value in structured.items():
                if isinstance(value, str) and _is_id_key(key):
                    self._remember(value, call)
        for item in result.get("content") or ():
            text = item.get("text") if isinstance(item, dict) else None
            if isinstance(text, str) and "-" in text:  # no hyphen, no UUID: skip the regex
                for value in _UUID.findall(text):
                    self._remember(value, call)

    def _remember(self, value: str, call: Call) -> None:
        if self.issued.get(value) is None:  # where it was issued first
            self.issued.remember(value, (call.tape, call.session.label, call.response_seq))

    def _refused(self, call: Call) -> list[Finding] | None:
        if not _NOT_FOUND.search(_all_text(call.response)):
            return None
        params = call.request.get("params")
        for value in _strings(params.get("arguments") if isinstance(params, dict) else None):
            origin = self.issued.get(value)
            if origin and (origin[0], origin[1]) != (call.tape, call.session.label):
                return [about_call("dead-id-reuse", "warning", call,
                                   f"{value!r} was issued in session {origin[1]} (tape {origin[0]}, record "
                                   f"{origin[2]}) and refused as not found here: it died with that session",
                                   spec.DEAD_ID)]
        return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _all_text(value: Any) -> str:
    return " ".join(_strings(value))
