"""How many examples the property tests try: ENVCHECK_HYPOTHESIS=fast for a quick loop (a fifth),
=thorough for five times as many; by default what each test asks for."""

from __future__ import annotations

import os

SCALE = {"fast": 0.2, "default": 1.0, "thorough": 5.0}.get(os.environ.get("ENVCHECK_HYPOTHESIS", "default"), 1.0)


def examples(n: int) -> int:
    return max(10, int(n * SCALE))
