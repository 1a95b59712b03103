"""benchmarks.import_floors on a small package written for the test."""

from benchmarks import import_floors


def _package(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_floors_rooms_and_arrows_back_up(tmp_path):
    root = _package(tmp_path, {
        'pkg/__init__.py': '',
        'pkg/base.py': '',
        'pkg/conf.py': 'from pkg.a import one\n',
        'pkg/a/__init__.py': '',
        'pkg/a/one.py': 'from pkg import base\n',
        'pkg/a/two.py': 'from . import one\n'
                        'def f():\n    import pkg.conf\n',
        'pkg/b/__init__.py': '',
        'pkg/b/three.py': 'from ..a.two import f\nimport os\n',
    })
    figures = import_floors.measure(root, 'pkg')
    assert figures['module_floors']['pkg.b.three'] == 5
    assert figures['depth_per_folder']['pkg.a'] == 2
    assert figures['depth_per_folder']['pkg.b'] == 1
    assert figures['room_cycles'] == [['pkg.a', 'pkg.conf']]
    assert figures['arrows_back_up'] == [('pkg.a.two', 'pkg.conf'),
                                         ('pkg.conf', 'pkg.a.one')]
    # pkg.a and pkg.conf share a floor above pkg.base; pkg.b stands on them.
    assert figures['rooms_depth'] == 3
    assert figures['cycles'] == []
    assert 'arrows that run back up: 2' in import_floors.report(figures)


def test_the_drivers_layers_hold():
    """Issue 28's layout, kept: no folder deeper than 6 floors, the
    package no deeper than 8 with folders as rooms, no arrow back up and
    no operation importing another."""
    import pathlib
    root = pathlib.Path(import_floors.__file__).resolve().parent.parent
    figures = import_floors.measure(root, 'k8s_mgmt')
    deep = {f: d for f, d in figures['depth_per_folder'].items() if d > 6}
    assert deep == {}
    assert figures['rooms_depth'] <= 8
    assert figures['arrows_back_up'] == []
    assert figures['cycles'] == [] and figures['room_cycles'] == []
    graph = import_floors.import_graph(root, 'k8s_mgmt')
    for mode in ('kubeadm', 'kubespray'):
        prefix = 'k8s_mgmt.modes.%s.' % mode
        ops = {prefix + op for op in ('instantiate', 'scale', 'heal',
                                      'terminate')}
        assert ops <= set(graph)
        across = sorted((m, i) for m in ops for i in graph[m] & ops)
        assert across == [], 'operations import each other: %s' % across
    kubeadm = 'k8s_mgmt.modes.kubeadm'
    assert not any(i.startswith(kubeadm) for m in graph
                   if m.startswith('k8s_mgmt.modes.kubespray')
                   for i in graph[m])
