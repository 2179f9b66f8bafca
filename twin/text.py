"""Excerpts of untrusted text for error lines.

An error line may quote what it found wrong, but only a short, printable excerpt: never a
file's content (a path pointing at ``/proc/self/environ`` or a password file must not print it),
never a megabyte-long value, never control characters or console markup (rich turns ``:x:`` into
an emoji and ``[red]`` into colour).
"""

from __future__ import annotations

import re

#: An emoji code as rich reads it (``:x:``, ``:thumbs_up:``): its first colon is written ``\\x3a``.
_EMOJI = re.compile(r":(?=[\w+-]+:)")

#: Characters of an excerpt kept, at most.
EXCERPT_CHARS = 40


def excerpt(value, limit: int = EXCERPT_CHARS) -> str:
    """``repr``-like quotation of ``value``: at most ``limit`` characters, printable ASCII only.

    Non-printable and non-ASCII characters are escaped (``\\x1b``, ``\\u202e``), what rich
    reads as markup (``[``) gets a backslash, the colon opening an emoji code (``:x:``) is
    written ``\\x3a``, and a longer value is cut with ``…`` and its length.

    >>> excerpt("32 degC")
    "'32 degC'"
    >>> print(excerpt(":x: [bold] 12:00"))
    '\\x3ax: \\[bold] 12:00'
    """
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value[: limit * 4]).decode("latin-1")
        text = value
    else:
        text = value if isinstance(value, str) else repr(value)
    n = len(text)
    head = text[:limit]
    out = []
    for ch in head:
        if ch == "[":
            out.append("\\[")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    quoted = "'" + _EMOJI.sub(r"\\x3a", "".join(out)) + "'"
    if n > limit:
        quoted += f"… ({n:,} characters)"
    return quoted
