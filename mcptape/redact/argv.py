"""A command line's secrets (a recorded server's argv): the word after `--api-key` or `-k`, the part after
`--auth=`, `-pVALUE`."""

from __future__ import annotations

from collections.abc import Iterator

from .names import SHORT_SECRET_FLAGS, key_is_sensitive
from .pseudonym import is_pseudonym


def argv_secrets(argv: list) -> Iterator[tuple[int, tuple[str, str]]]:
    """(index, (what stays, the secret)) for each secret a command line holds in an option: the word after
    `--api-key`/`-k`, the part after `--auth=`, `-pVALUE`. Values already pseudonyms are left alone."""
    for i, word in enumerate(argv):
        if not isinstance(word, str) or not word.startswith("-") or word == "--":
            continue
        name, eq, value = word.partition("=")
        if eq:  # --name=VALUE
            if key_is_sensitive(name.lstrip("-")) and value and not is_pseudonym(value):
                yield i, (name + "=", value)
            continue
        if len(word) > 2 and word[1] in SHORT_SECRET_FLAGS and word[1] != "-" and word[2] != "-":
            if not is_pseudonym(word[2:]):  # -pVALUE
                yield i, (word[:2], word[2:])
            continue
        secret_flag = word[1:] in SHORT_SECRET_FLAGS if len(word) == 2 else key_is_sensitive(word.lstrip("-"))
        if secret_flag and i + 1 < len(argv) and isinstance(argv[i + 1], str) and not is_pseudonym(argv[i + 1]) \
                and not argv[i + 1].startswith("-"):
            yield i + 1, ("", argv[i + 1])
