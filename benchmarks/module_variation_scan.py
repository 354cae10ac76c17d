"""How each problem file's model differs between workloads, as the built-in agent lowers it
(``forgekernel.generate.examples.module_variation``: "fixed", "floats" or None), one line per
file; a file that fails to convert or build prints ``ERR <exception type>``:

    python3 benchmarks/module_variation_scan.py .kb/level1/*.py .kb/level2/*.py .kb/level3/*.py
"""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path


def main(files: list[str]) -> None:
    from forgekernel import kernelbench
    from forgekernel.generate import examples
    from forgekernel.task import load_task

    root = Path(tempfile.mkdtemp(prefix="variation-"))
    for name in files:
        f = Path(name)
        try:
            signal.alarm(60)
            variation = examples.module_variation(load_task(kernelbench.convert(f, root / f.stem)))
            signal.alarm(0)
        except BaseException as exc:  # noqa: BLE001 - a line per file, whatever it raised
            variation = f"ERR {type(exc).__name__}"
        print(f.name, variation, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
