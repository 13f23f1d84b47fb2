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


USAGE = ("usage: python examples/tour.py [SECTION ...]\n"
         "  runs every section, or those named (s1 ... s7, or a name's start: s3 s6);\n"
         "  sections: " + ", ".join(SECTIONS) + "  (s4, the interpreter, runs under all of them)")


def main(selected=None):
    """Run the sections named (all of them by default); 0, or 2 with the usage for an argument
    that names no section (``--help`` included)."""
    selected = list(selected or [])
    unknown = [arg for arg in selected if not any(name.startswith(arg) for name in SECTIONS)]
    if unknown or "-h" in selected or "--help" in selected:
        if unknown and unknown != ["-h"] and unknown != ["--help"]:
            print(f"no section named {', '.join(unknown)}", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    ran = 0
    for name in SECTIONS:
        if selected and not any(name.startswith(prefix) for prefix in selected):
            continue
        importlib.import_module(name).main()
        ran += 1
    print()
    print(f"tour finished: {ran} section(s), every result was the same as eager")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
