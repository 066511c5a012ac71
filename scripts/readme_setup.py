#!/usr/bin/env python
"""The README's set-up commands, as `.ci/run` runs them: the ```bash blocks of "## Set up".

    python scripts/readme_setup.py README.md     # prints one command a line

CI takes the commands from the README itself, so what a new user copies is what CI proves.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def setup_commands(readme: str) -> list[str]:
    """The shell commands of the README's "## Set up" section, one per ```bash block."""
    section = re.search(r"^## Set up\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if section is None:
        raise ValueError("README has no '## Set up' section")
    blocks = re.findall(r"^```(?:bash|sh)\n(.*?)^```", section.group(1), re.M | re.S)
    commands = [" ".join(block.split("\n")).strip() for block in blocks]
    return [c for c in commands if c]


if __name__ == "__main__":
    try:
        for command in setup_commands(Path(sys.argv[1] if len(sys.argv) > 1 else "README.md").read_text()):
            print(command)
    except (OSError, ValueError) as exc:
        sys.exit(f"readme_setup: {exc}")
