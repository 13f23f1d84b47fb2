"""``python -m symexec``: what is installed, and how to use it.

    python -m symexec            the versions (symexec, torch, Python) and where to start
    python -m symexec --version  symexec's version alone
"""

from __future__ import annotations

import argparse
import platform
import sys

import torch

from ._version import __version__
from .versions import SUPPORTED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m symexec",
        description="symexec: PyTorch Dynamo's frontend in pure Python. Compile with "
                    "symexec.compile(fn); see what it captured with symexec.explain(fn, *args).")
    parser.add_argument("--version", action="version", version=f"symexec {__version__}")
    parser.parse_args(argv)
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED
    running = sys.version_info[:2]
    supported = SUPPORTED[0] <= running <= SUPPORTED[1]
    print(f"symexec {__version__}")
    print(f"torch {torch.__version__}")
    print(f"{platform.python_implementation()} {platform.python_version()} "
          f"({'supported' if supported else 'not supported'}: {lo_major}.{lo_minor} to {hi_major}.{hi_minor})")
    print()
    print("  import symexec")
    print("  compiled = symexec.compile(fn)            # or @symexec.compile, backend=..., fullgraph=True")
    print("  print(symexec.explain(fn, *args))          # graphs, breaks, guards, recompiles")
    print("  symexec.set_logs(\"graph_code,recompiles\")  # or SYMEXEC_LOGS=graph_code,guards,recompiles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
