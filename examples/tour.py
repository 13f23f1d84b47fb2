"""A tour of symexec on the examples of the design document, section by section.

Run it with ``python examples/tour.py``; each section is also a script of its own:

==========================  =====================================================================
s1_fx_graph.py              §1  ``mse(x, y)`` traced into a three-node FX graph
s2_specialisation.py        §2  non-tensor values are constants: ``if n >= 0`` with n=2 → ``mul = 3 * y``
s3_guards_and_recompiles.py §3  guards, sources and the cache: ``L['b'] == 'Hello'``, ``len(L['l']) == 2``
s5_dynamic_shapes.py        §5  ints and sizes becoming symbolic, ``dynamic=True``, the ``graph_sizes`` log
s6_graph_breaks.py          §6  ``print("Hi")`` between two graphs, continuation functions
s7_debug_output.py          §7  every log artifact in turn, then ``symexec.explain``
==========================  =====================================================================

(§4, the interpreter, is what runs underneath all of them; the ``trace`` log in s7 shows it
instruction by instruction.) ``python examples/tour.py s3 s6`` runs only the named sections.
``examples/explore.ipynb`` walks through ``symexec.explain()`` in Jupyter.

Every example compares what symexec returns with what plain Python returns, and stops with
an error if they differ.
"""

import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # so `import s1_fx_graph` works from anywhere

SECTIONS = [
    "s1_fx_graph",
    "s2_specialisation",
    "s3_guards_and_recompiles",
    "s5_dynamic_shapes",
    "s6_graph_breaks",
    "s7_debug_output",
]


def main(selected=None):
    for name in SECTIONS:
        if selected and not any(name.startswith(prefix) for prefix in selected):
            continue
        importlib.import_module(name).main()
    print()
    print("tour finished: every result was the same as eager")


if __name__ == "__main__":
    main(sys.argv[1:])
