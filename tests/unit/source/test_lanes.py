"""Every test runs in a lane that CI runs: each test file under tests/
lies in a lane's folder, and .ci/run and tox.ini run exactly those
folders (the lab's only with whole modules per xdist worker)."""

import configparser
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
LANES = {'unit': ['tests/unit'], 'functional': ['tests/functional'],
         'lab': ['tests/lab']}


def _folders(words):
    return [word for word in words.split() if word.startswith('tests')]


def test_every_test_file_is_in_a_lane():
    folders = [folder for lane in LANES.values() for folder in lane]
    strays = []
    for path, _dirs, files in os.walk(os.path.join(ROOT, 'tests')):
        relative = os.path.relpath(path, ROOT)
        inside = any(relative == folder or relative.startswith(folder + '/')
                     for folder in folders)
        strays += [os.path.join(relative, name) for name in files
                   if name.startswith('test_') and name.endswith('.py')
                   and not inside]
    assert strays == []


def test_ci_and_tox_run_the_lanes_folders():
    with open(os.path.join(ROOT, '.ci', 'run')) as handle:
        ci = handle.read()
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(os.path.join(ROOT, 'tox.ini'))
    for lane, folders in LANES.items():
        found = re.search(r"^\s*\[%s\]='([^']*)'$" % lane, ci, re.M)
        assert found, lane
        commands = tox['testenv:%s' % lane]['commands']
        assert _folders(found.group(1)) == folders
        assert _folders(commands.replace('{posargs}', '')) == folders
        if lane == 'lab':   # a module's lab must not be built twice
            for words in (found.group(1).split(), commands.split()):
                assert '-n' not in words or (
                    ' '.join(words).count('--dist loadfile') == 1), words
    assert re.search(r'^lanes=\(unit functional lab\)$', ci, re.M)
