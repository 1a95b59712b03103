"""Extract the InstantiateVnfRequest bodies from the seed documents.

The seeds (specs and the user guide, not part of the repository) show the
request bodies as JSON with ``#`` comments. ``python
tests/unit/params/params_seed_bodies.py SEED_DIR OUT_DIR`` writes each body,
comments removed, to ``OUT_DIR/seed_<doc>_<n>_<flavour>.json``; bodies that
carry no ``k8s_cluster_installation_param`` (seed 000's old design) are
written as ``legacy_seed_...`` because this driver cannot accept them.
The tests check the committed fixtures still match the seeds when the seeds
are available.
"""

import glob
import json
import os
import sys


def strip_comments(text):
    """Drop ``#`` to end of line wherever it is outside a JSON string."""
    out, in_string, escaped, skipping = [], False, False, False
    for char in text:
        if skipping:
            if char == '\n':
                skipping = False
                out.append(char)
            continue
        if in_string:
            escaped = char == '\\' and not escaped
            if char == '"' and not escaped:
                in_string = False
        elif char == '"':
            in_string = True
        elif char == '#':
            skipping = True
            continue
        out.append(char)
    return ''.join(out)


def _object_end(text, start):
    """Index just past the JSON object starting at ``text[start] == '{'``."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == '\\':
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == '{':
            depth += 1
        elif char == '}':
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def request_bodies(text):
    """Every JSON object at the start of a line that has a flavourId."""
    text = strip_comments(text)
    bodies, position = [], 0
    while True:
        start = text.find('\n{', position)
        if start < 0:
            return bodies
        start += 1
        end = _object_end(text, start)
        if end is None:
            return bodies
        try:
            body = json.loads(text[start:end])
        except ValueError:
            position = start + 1
            continue
        if isinstance(body, dict) and 'flavourId' in body:
            bodies.append(body)
        position = end


def fixture_name(doc_number, index, body):
    params = body.get('additionalParams') or {}
    prefix = ('seed' if 'k8s_cluster_installation_param' in params
              else 'legacy_seed')
    return '%s_%s_%d_%s.json' % (prefix, doc_number, index, body['flavourId'])


def extract(seed_dir):
    """``{fixture file name: body}`` for every seed document."""
    found = {}
    for path in sorted(glob.glob(os.path.join(seed_dir, '*.txt'))):
        doc_number = os.path.basename(path).split('_', 1)[0]
        with open(path, encoding='utf-8') as handle:
            bodies = request_bodies(handle.read())
        for index, body in enumerate(bodies):
            found[fixture_name(doc_number, index, body)] = body
    return found


def main(seed_dir, out_dir):
    for name, body in extract(seed_dir).items():
        with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as out:
            json.dump(body, out, indent=2, ensure_ascii=False)
            out.write('\n')
        print(name)


if __name__ == '__main__':
    main(*sys.argv[1:3])
