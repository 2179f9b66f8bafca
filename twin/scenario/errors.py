"""The domain error for bad input."""

from __future__ import annotations

import re

from twin.text import excerpt

_PLAIN = re.compile(r"[A-Za-z0-9_.\-/+@%=,]{1,64}")


class ScenarioError(ValueError):
    """A scenario that cannot be used, located by file, line and field path.

    ``str(err)`` is the one line the CLI prints: ``FILE:LINE: field.path: message``.
    """

    def __init__(self, message: str, *, file: str = "<scenario>", line: int = 1, path: str = ""):
        self.message = message
        self.file = file
        self.line = line
        self.path = path or "<document>"
        super().__init__(f"{file}:{line}: {self.path}: {message}")


class OptionError(ScenarioError):
    """A bad command-line option (or the API argument standing for one), named as the user typed
    it: ``str(err)`` is ``--option: message``, never a place in a file."""

    def __init__(self, option: str, message: str):
        ValueError.__init__(self, f"{option}: {message}")
        self.option = option
        self.message = message
        self.file = "<command line>"
        self.line = 0
        self.path = option


def format_path(loc: tuple) -> str:
    """``("halls", 0, "rows", 1, "name")`` → ``halls[0].rows[1].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part = str(part)
            if not _PLAIN.fullmatch(part):  # a key from the file: quote a short excerpt of it
                part = excerpt(part)
            out += ("." if out else "") + part
    return out


class FieldError(ValueError):
    """A problem found after parsing, at a field path; the loader adds file and line."""

    def __init__(self, loc: tuple, message: str):
        self.loc = tuple(loc)
        self.message = message
        super().__init__(f"{format_path(self.loc)}: {message}")
