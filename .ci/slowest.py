"""The slowest tests of a whole ``.ci/run``, each with its lane.

Each lane's pytest prints its own slowest durations (``--durations``,
pyproject.toml) somewhere in a log of thousands of lines; .ci/run's closing
summary prints them together, slowest first::

    python .ci/slowest.py 15 unit=/tmp/x/unit.log lab=/tmp/x/lab.log
"""

import re
import sys

# "123.45s call     tests/lab/test_x.py::test_y"
_LINE = re.compile(
    r'^\s*(\d+(?:\.\d+)?)s\s+(setup|call|teardown)\s+(\S.*?)\s*$')
_HEADER = re.compile(r'^=+ slowest (\d+ )?durations =+$')


def durations(text):
    """[(seconds, phase, test id)] of the durations section(s) of a pytest
    log."""
    found, inside = [], False
    for line in text.splitlines():
        if _HEADER.match(line.strip()):
            inside = True
            continue
        if inside:
            match = _LINE.match(line)
            if match:
                found.append((float(match[1]), match[2], match[3]))
            elif line.startswith('='):
                inside = False
    return found


def slowest(logs, count):
    """The ``count`` slowest (seconds, lane, phase, test id) of ``logs``,
    {lane: log text}."""
    every = [(seconds, lane, phase, test)
             for lane, text in logs.items()
             for seconds, phase, test in durations(text)]
    return sorted(every, key=lambda row: -row[0])[:count]


def lines(rows):
    return ['%8.1f s  %-10s %-8s %s' % (seconds, lane, phase, test)
            for seconds, lane, phase, test in rows]


def main(argv):
    count, logs = int(argv[0]), {}
    for word in argv[1:]:
        lane, _eq, path = word.partition('=')
        try:
            with open(path, encoding='utf-8', errors='replace') as handle:
                logs[lane] = handle.read()
        except OSError:
            logs[lane] = ''
    for line in lines(slowest(logs, count)):
        print(line)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
