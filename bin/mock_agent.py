#!/usr/bin/env python3
"""The bundled mock agent as a script: `bin/mock_agent.py generate < prompt`.

A thin shim over `freemad.agents.mock.main` (the `freemad-mock-agent` console script), for
configs that name a file rather than an installed command. Run it with a Python that has
FREE-MAD installed (the virtualenv's, or `python bin/mock_agent.py`).
"""

from __future__ import annotations

import sys

from freemad.agents.mock import main

if __name__ == "__main__":
    sys.exit(main())
