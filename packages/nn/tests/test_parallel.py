"""ember.nn.parallel without MPI: what can be checked on one process (the DDP behaviour
itself runs under mpiexec in packages/mp/tests/test_distributed.py)."""
import ast
import inspect
import subprocess
import sys

import ember.nn.parallel.distributed as ddp_module


def _distributed_module(node):
    """Whether the expression `node` names the ember.distributed module in DDP's source
    (`dist`, `self._dist`, `_dist()`)."""
    if isinstance(node, ast.Name):
        return node.id == "dist"
    if isinstance(node, ast.Attribute):
        return node.attr == "_dist"
    return isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_dist"


def test_issue17_nn_parallel_uses_only_public_distributed_names():
    tree = ast.parse(inspect.getsource(ddp_module))
    private = [ast.unparse(n) for n in ast.walk(tree)
               if (isinstance(n, ast.ImportFrom) and (n.module or "").startswith(
                   "ember.distributed._"))
               or (isinstance(n, ast.Attribute) and n.attr.startswith("_")
                   and not n.attr.startswith("__") and _distributed_module(n.value))]
    assert private == []


def test_issue17_nn_parallel_imports_without_ember_mp():
    # ember-nn does not depend on ember-mp: DDP says what to install when it is made
    code = ("import sys; sys.modules['ember.distributed'] = None\n"
            "import ember as em, ember.nn.parallel as parallel\n"
            "try:\n"
            "    parallel.DistributedDataParallel(em.nn.Linear(2, 2))\n"
            "except ImportError as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "ModuleNotFoundError DistributedDataParallel needs ember.distributed from the "
        "ember-mp package: pip install 'ember-mp[distributed]'"), out.stdout
