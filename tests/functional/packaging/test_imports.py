"""No import cycles in the driver or the lab, and the driver loads no lab.

The graph is built statically from the source (ast), so an import inside a
function counts as much as one at the top: a function-level import that
closes a cycle only hides it until the function runs. ``from a import b``
is an edge to the module ``a.b`` when that is a module, else to ``a``.
A package's ``__init__`` is the package's own module; importing ``a.b``
also runs ``a``, which is not counted as an edge (it would make every
package a cycle with its own submodules).
"""

import ast
import os
import subprocess
import sys

from benchmarks import import_floors

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
ROOTS = {'k8s_mgmt': REPO, 'k8s_mgmt_lab': os.path.join(REPO, 'lab')}
# Data of the driver package, not its code (the sample VNF package).
NOT_MODULES = ('k8s_mgmt.samples',)


def modules(roots=ROOTS):
    """{module name: path} of every .py file of the packages in ``roots``."""
    found = {}
    for package, root in roots.items():
        for dirpath, dirnames, filenames in os.walk(
                os.path.join(root, package)):
            dirnames[:] = [d for d in dirnames if d != '__pycache__']
            rel = os.path.relpath(dirpath, root).split(os.sep)
            for name in filenames:
                if not name.endswith('.py'):
                    continue
                parts = rel + ([] if name == '__init__.py' else [name[:-3]])
                module = '.'.join(parts)
                if not module.startswith(NOT_MODULES):
                    found[module] = os.path.join(dirpath, name)
    return found


def _imported(node, module, is_package, found):
    """The modules of ``found`` an import node imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ''
    if node.level:
        parts = module.split('.')
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = '.'.join(parts[:keep] + ([base] if base else []))
    # "from a import b": the module a.b if there is one, else a name of a.
    return ['%s.%s' % (base, alias.name)
            if '%s.%s' % (base, alias.name) in found else base
            for alias in node.names]


def import_graph(found=None):
    """{module: set of modules of ``found`` it imports}."""
    found = modules() if found is None else found
    graph = {}
    for module, path in found.items():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        is_package = path.endswith('__init__.py')
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = _imported(node, module, is_package, found)
                edges |= {n for n in names if n in found and n != module}
        graph[module] = edges
    return graph


def cycles(graph):
    """Every strongly connected component of more than one module (and
    every module importing itself), each as a sorted list."""
    return sorted(sorted(component) for component
                  in import_floors.strongly_connected(graph)
                  if len(component) > 1
                  or any(m in graph[m] for m in component))


def test_the_graph_covers_both_packages_and_their_function_level_imports():
    graph = import_graph()
    assert {'k8s_mgmt.driver', 'k8s_mgmt.cli.main', 'k8s_mgmt_lab.machines.vm',
            'k8s_mgmt_lab.kube.kubeadm',
            'k8s_mgmt_lab.cli.lab'} <= set(graph)
    # lcm loads the driver the VNFD names through stevedore (drivers.py).
    assert 'k8s_mgmt_lab.conductor.drivers' in graph[
        'k8s_mgmt_lab.conductor.lcm']
    assert 'k8s_mgmt_lab.kube.kubeadm_join' in graph[
        'k8s_mgmt_lab.kube.kubeadm']


def test_no_import_cycles():
    found = cycles(import_graph())
    assert found == [], 'import cycles: ' + '; '.join(
        ' <-> '.join(c) for c in found)


def test_a_cycle_is_found_and_named(tmp_path):
    # A cycle through a function-level import, as cleanup <-> net was.
    pkg = tmp_path / 'pkg'
    pkg.mkdir()
    (pkg / '__init__.py').write_text('')
    (pkg / 'a.py').write_text('from pkg import b\n')
    (pkg / 'b.py').write_text('def f():\n    from pkg.c import x\n')
    (pkg / 'c.py').write_text('from . import a\nx = 1\n')
    (pkg / 'd.py').write_text('import pkg.a\n')
    found = cycles(import_graph(modules({'pkg': str(tmp_path)})))
    assert found == [['pkg.a', 'pkg.b', 'pkg.c']]


def test_the_driver_imports_nothing_of_the_lab():
    graph = import_graph()
    driver = {m: sorted(e for e in edges if e.startswith('k8s_mgmt_lab'))
              for m, edges in graph.items() if m.startswith('k8s_mgmt.')}
    assert {m: e for m, e in driver.items() if e} == {}


def test_importing_the_driver_loads_no_lab_module():
    code = ('import sys, k8s_mgmt.driver, k8s_mgmt.cli.main; '
            'print("\\n".join(sorted(m for m in sys.modules '
            'if m.split(".")[0] in ("k8s_mgmt", "k8s_mgmt_lab"))))')
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = proc.stdout.split()
    assert 'k8s_mgmt.driver' in loaded
    assert [m for m in loaded if m.startswith('k8s_mgmt_lab')] == []
