"""examples/explore.ipynb runs top to bottom in a real Jupyter kernel without errors, and its
explain cells render symexec's HTML view.

The kernel is this interpreter (``sys.executable``): the test writes a ``python3`` kernelspec
pointing at it into a temporary directory and hands nbclient a kernel manager that looks
only there, so whatever other ``python3`` kernels the machine has registered (another Python,
a system Jupyter) cannot be picked up instead. ipykernel, nbclient and nbformat come with the
``test`` extra.
"""

import json
import os
import sys

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

# (The kernel runs the same symexec as the example scripts, which run on every Python.)
pytestmark = pytest.mark.broad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "examples", "explore.ipynb")


def _kernel_manager(tmp_path):
    kernels = tmp_path / "kernels"
    spec_dir = kernels / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (symexec tests)",
        "language": "python",
    }))
    specs = KernelSpecManager(kernel_dirs=[str(kernels)])
    assert specs.get_kernel_spec("python3").argv[0] == sys.executable
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("notebook")
    saved = {name: os.environ.get(name) for name in ("IPYTHONDIR", "SYMEXEC_LOGS")}
    os.environ["IPYTHONDIR"] = str(tmp_path / "ipython")  # no profile written into the user's home
    os.environ.pop("SYMEXEC_LOGS", None)
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(nb, km=_kernel_manager(tmp_path), kernel_name="python3", timeout=120,
                                allow_errors=True, resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
        client.execute()
        return nb
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_no_cell_raises(executed):
    errors = [(number, output.get("ename"), output.get("evalue"))
              for number, cell in enumerate(_code_cells(executed), 1)
              for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors


def test_no_internal_error_ran_anything_eagerly(executed):
    warned = [output.get("text", "") for cell in _code_cells(executed) for output in cell.outputs
              if output.output_type == "stream" and "SymexecWarning" in output.get("text", "")]
    assert not warned, warned


def test_every_code_cell_ran(executed):
    assert all(cell.execution_count for cell in _code_cells(executed))


def _html_outputs(nb):
    return [output["data"]["text/html"] for cell in _code_cells(nb) for output in cell.outputs
            if output.output_type in ("execute_result", "display_data") and "text/html" in output.get("data", {})]


def test_explain_cells_render_the_html_view(executed):
    views = _html_outputs(executed)
    assert len(views) >= 3  # the break example, specialisation, the inlined-call break
    first = views[0]
    assert '<div class="symexec-explain">' in first
    assert "<details" in first
    assert '<tr class="break">' in first and "print(&quot;Hi&quot;)" in first
    assert "__resume_in_" in first
    assert all("<details" in view for view in views)


def test_text_outputs_show_the_explained_call(executed):
    text = "".join(output.get("text", "") for cell in _code_cells(executed) for output in cell.outputs
                   if output.output_type == "stream")
    assert "Hi\n" in text  # the call explain made really printed
    assert "2 graph(s), 1 graph break(s)" in text
    assert "mul = 3 * y" in text
    assert "len(L['l']) == 2" in text
    assert "8 <= L['a'].size()[0]" in text
    assert "[symexec.graph_code] TRACED GRAPH of fn" in text  # the logs reach the notebook's stderr
