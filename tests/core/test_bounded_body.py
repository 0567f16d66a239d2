"""capture/bounded.py: a body held as it passes, whole up to the limit, cut past it with the size and SHA-256 of all
of it; hashed as it comes once past 1 MB (or the limit, if lower), so passing the limit costs no hash at once."""

from __future__ import annotations

import hashlib

import pytest

from mcptape.capture.bounded import Bounded
from mcptape.tape import records

MB = 1 << 20


def passed(limit: int, size: int, chunk: int) -> tuple[Bounded, bytes]:
    body = bytes(i % 251 for i in range(size))
    kept = Bounded(limit)
    for at in range(0, size, chunk):
        kept.add(body[at:at + chunk])
    return kept, body


@pytest.mark.parametrize("size", [MB - 1, MB + 1, 3 * MB])
def test_a_body_up_to_the_limit_is_kept_whole(size):
    kept, body = passed(3 * MB, size, 65536)
    assert not kept.cut and kept.whole() == body and kept.fields() == records.body(body)


@pytest.mark.parametrize("limit, chunk", [(3 * MB, 65536), (3 * MB, 5 * MB), (records.CUT_KEEP, 1000)])
def test_a_body_past_the_limit_keeps_its_first_bytes_its_size_and_the_hash_of_all_of_it(limit, chunk):
    kept, body = passed(limit, 4 * MB + 7, chunk)
    fields = kept.fields()
    assert kept.cut and fields["size"] == len(body)
    assert fields["sha256"] == hashlib.sha256(body).hexdigest()
    assert body.startswith(fields["raw"]) and len(fields["raw"]) <= records.CUT_KEEP


def test_cleared_it_starts_again():
    kept, _ = passed(MB, 2 * MB, 65536)
    kept.clear()
    kept.add(b"{}")
    assert not kept.cut and kept.whole() == b"{}"
