"""What the gateway and this package both need, written once in ``shared.json`` beside this file.

The gateway reads the same file (``src/config/shared.ts``): ``LIMITS`` are the bounds both sides
enforce (the stream window, the read block, the display bundle bound, the run heartbeat), and
``RUN_FOLDER`` is the run-folder format (``run_folder.py``). A name is looked up here, never
repeated: change a value in ``shared.json`` and both sides change.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["LIMITS", "RUN_FOLDER", "SHARED_FILE"]

SHARED_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shared.json")

with open(SHARED_FILE, encoding="utf-8") as _handle:
    _SPEC: dict[str, Any] = json.load(_handle)

#: Bound name → value (``limits`` of shared.json, without their descriptions).
LIMITS: dict[str, int] = {name: item["value"] for name, item in _SPEC["limits"].items()}
#: The ``run_folder`` section: file names, kinds and contents, the time format.
RUN_FOLDER: dict[str, Any] = _SPEC["run_folder"]
