"""Print pip constraints pinning every direct dependency of twin (core, extras) to the lowest
version pyproject.toml declares: ``name>=X`` becomes ``name==X``. CI installs with them in a
separate virtualenv and runs a smoke subset, so the declared floors are known to work."""

import re
import sys
import tomllib
from pathlib import Path

project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
requirements = list(project["dependencies"])
for extra in project["optional-dependencies"].values():
    requirements += [r for r in extra if not r.startswith("twin[")]
for req in requirements:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*>=\s*([^,;\s]+)\s*", req)
    if m is None:
        sys.exit(f"pyproject.toml: '{req}' has no lower bound (name>=version)")
    print(f"{m.group(1)}=={m.group(3)}")
