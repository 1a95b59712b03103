"""How the driver's modules stand on each other: floors, depths, cycles.

    .venv/bin/python -m benchmarks.import_floors [--package k8s_mgmt]
        [--modules] [--json]

Reads every module of the package (its source only, nothing is imported)
and keeps the imports that name a module inside the package, at module
level and inside functions alike. Then it prints:

* each folder's depth: floors counted among that folder's modules only
  (a module importing nothing in the folder is floor 1; a module stands one
  floor above the highest module of the folder it imports);
* the package's depth with folders as rooms: each subpackage is one room
  (its subfolders included), each top-level module is a room of its own,
  and a room stands one floor above the highest room it imports;
* import cycles between modules;
* arrows that run back up: imports from a room to a room that imports it,
  directly or through others (cycles among rooms);
* with ``--modules``, every module's floor in the whole package.

Modules in a cycle share one floor. The package's data (``samples``) is
not read."""

import argparse
import ast
import json
import pathlib
import sys

SKIPPED_DIRS = {'samples', '__pycache__'}


def module_files(root, package):
    """Module name -> file, for every module of ``package`` under ``root``."""
    modules = {}
    base = root / package
    for path in sorted(base.rglob('*.py')):
        rel = path.relative_to(root)
        if SKIPPED_DIRS & set(rel.parts[:-1]):
            continue
        parts = list(rel.with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        modules['.'.join(parts)] = path
    return modules


def _resolve(name, modules):
    """The most specific module of ``modules`` that ``name`` lies in."""
    while name and name not in modules:
        name = name.rpartition('.')[0]
    return name or None


def imports_of(module, path, modules, package):
    """The package's modules that ``module`` imports anywhere in its file."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == '__init__.py'
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = module.split('.')
                drop = node.level - (1 if is_package else 0)
                anchor = anchor[:len(anchor) - drop] if drop else anchor
                source = '.'.join(anchor + ([node.module]
                                            if node.module else []))
            else:
                source = node.module or ''
            names = [source + '.' + alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name != package and not name.startswith(package + '.'):
                continue
            target = _resolve(name, modules)
            if target and target != module:
                found.add(target)
    return found


def import_graph(root, package):
    modules = module_files(root, package)
    return {name: imports_of(name, path, modules, package)
            for name, path in modules.items()}


def strongly_connected(graph):
    """Tarjan's components of ``graph`` (node -> set of nodes)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return components


def floors(graph):
    """Node -> floor; the nodes of one cycle share a floor."""
    components = strongly_connected(graph)
    component_of = {node: i for i, comp in enumerate(components)
                    for node in comp}
    floor = {}
    # Tarjan emits a component after every component it reaches.
    for i, component in enumerate(components):
        below = [floor[component_of[t]] for n in component
                 for t in graph.get(n, ()) if component_of[t] != i]
        floor[i] = 1 + max(below, default=0)
    return {node: floor[component_of[node]] for node in graph}


def room_of(module, package):
    """A subpackage's first-level folder, or the top-level module itself."""
    parts = module.split('.')
    if module == package:
        return package
    return '.'.join(parts[:2])


def restricted(graph, keep):
    return {node: {t for t in targets if keep(t)}
            for node, targets in graph.items() if keep(node)}


def rooms_graph(graph, package):
    rooms = {}
    for node, targets in graph.items():
        room = room_of(node, package)
        rooms.setdefault(room, set())
        rooms[room].update(room_of(t, package) for t in targets
                           if room_of(t, package) != room)
    return rooms


def cycles(graph):
    return [sorted(c) for c in strongly_connected(graph) if len(c) > 1]


def arrows_back_up(graph, rooms, package):
    """Module-level imports that close a cycle among rooms."""
    in_cycle = {}
    for i, component in enumerate(strongly_connected(rooms)):
        if len(component) > 1:
            for room in component:
                in_cycle[room] = i
    arrows = []
    for node, targets in sorted(graph.items()):
        source = room_of(node, package)
        for target in sorted(targets):
            room = room_of(target, package)
            if (room != source and source in in_cycle
                    and in_cycle.get(room) == in_cycle[source]):
                arrows.append((node, target))
    return arrows


def measure(root, package):
    graph = import_graph(root, package)
    files = module_files(root, package)
    folder = {m: '.'.join(files[m].parent.relative_to(root).parts)
              for m in graph}
    depth_per_folder = {}
    for name in sorted(set(folder.values())):
        inside = restricted(graph, lambda m, f=name: folder[m] == f)
        depth_per_folder[name] = max(floors(inside).values())
    rooms = rooms_graph(graph, package)
    room_floors = floors(rooms)
    return {
        'modules': len(graph),
        'module_floors': floors(graph),
        'depth_per_folder': depth_per_folder,
        'room_floors': room_floors,
        'rooms_depth': max(room_floors.values()),
        'cycles': cycles(graph),
        'room_cycles': cycles(rooms),
        'arrows_back_up': arrows_back_up(graph, rooms, package),
    }


def report(figures, show_modules=False):
    lines = ['%d modules' % figures['modules'], '',
             'depth per folder (floors among its own modules):']
    for folder, depth in sorted(figures['depth_per_folder'].items()):
        lines.append('  %-34s %2d' % (folder, depth))
    lines += ['', 'depth with folders as rooms: %d' % figures['rooms_depth']]
    for room, floor in sorted(figures['room_floors'].items(),
                              key=lambda item: (-item[1], item[0])):
        lines.append('  %-34s %2d' % (room, floor))
    lines += ['', 'import cycles between modules: %d'
              % len(figures['cycles'])]
    lines += ['  ' + ' <-> '.join(c) for c in figures['cycles']]
    lines += ['', 'cycles among rooms: %d' % len(figures['room_cycles'])]
    lines += ['  ' + ' <-> '.join(c) for c in figures['room_cycles']]
    lines += ['', 'arrows that run back up: %d'
              % len(figures['arrows_back_up'])]
    lines += ['  %s -> %s' % arrow for arrow in figures['arrows_back_up']]
    if show_modules:
        lines += ['', 'floor of each module in the whole package:']
        for module, floor in sorted(figures['module_floors'].items(),
                                    key=lambda item: (-item[1], item[0])):
            lines.append('  %-50s %2d' % (module, floor))
    return '\n'.join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--package', default='k8s_mgmt')
    parser.add_argument('--root', type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[1])
    parser.add_argument('--modules', action='store_true',
                        help="also print every module's floor")
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args(argv)
    figures = measure(args.root, args.package)
    if args.json:
        figures['arrows_back_up'] = [list(a)
                                     for a in figures['arrows_back_up']]
        print(json.dumps(figures, indent=1, sort_keys=True))
    else:
        print(report(figures, args.modules))
    return 0


if __name__ == '__main__':
    sys.exit(main())
