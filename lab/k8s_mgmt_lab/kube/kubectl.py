"""kubectl stand-in: the commands the node scripts (and an operator poking at
a lab node) use: ``version --client``, ``get --raw``, ``get`` with ``-o
json|yaml|name|jsonpath=``, ``apply -f`` and ``delete``."""

import json
import os
import re
import sys

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import objects

PROG = 'kubectl'
SHORT = {'no': 'nodes', 'po': 'pods', 'ns': 'namespaces', 'sa':
         'serviceaccounts', 'pv': 'persistentvolumes', 'pvc':
         'persistentvolumeclaims', 'cm': 'configmaps', 'pdb':
         'poddisruptionbudgets', 'svc': 'services', 'deploy': 'deployments',
         'ds': 'daemonsets'}


def parse(argv):
    opts = {'kubeconfig': os.environ.get('KUBECONFIG') or os.path.expanduser(
        '~/.kube/config'), 'namespace': None, 'output': None, 'file': None,
        'raw': None}
    words, i = [], 0
    names = {'--kubeconfig': 'kubeconfig', '-n': 'namespace',
             '--namespace': 'namespace', '-o': 'output', '--output': 'output',
             '-f': 'file', '--filename': 'file', '--raw': 'raw'}
    while i < len(argv):
        arg = argv[i]
        key, _, value = arg.partition('=')
        if key in names and value:
            opts[names[key]] = value
        elif arg in names:
            i += 1
            opts[names[arg]] = argv[i]
        elif arg.startswith('-'):
            pass  # flags the stand-in does not need (--client, --overwrite)
        else:
            words.append(arg)
        i += 1
    return words, opts


def resource_path(kind_word, namespace, name=None):
    plural = SHORT.get(kind_word.lower(), kind_word.lower())
    if plural not in objects.RESOURCES:
        plural = objects.plural_of(kind_word) if kind_word[:1].isupper() \
            else (plural if plural.endswith('s') else plural + 's')
    group, version, _, namespaced = objects.RESOURCES.get(
        plural, ('', 'v1', None, bool(namespace)))
    base = '/apis/%s/%s' % (group, version) if group else '/api/' + version
    if namespaced:
        base += '/namespaces/%s' % (namespace or 'default')
    return base + '/' + plural + ('/' + name if name else '')


def object_path(obj, namespace):
    kind = obj['kind']
    group_version = obj.get('apiVersion', 'v1')
    group, _, version = group_version.rpartition('/')
    plural = objects.plural_of(kind)
    base = '/apis/%s/%s' % (group, version) if group else '/api/' + version
    if kind not in objects.CLUSTER_KINDS:
        ns = obj.get('metadata', {}).get('namespace') or namespace or \
            'default'
        base += '/namespaces/' + ns
    return base + '/' + plural


def template(value, text):
    """A kubectl JSONPath template: ``{...}`` expressions, ``{"..."}``
    literals and the plain text between them (``{.a}{" "}{.b}``)."""
    out, rest = [], text
    while rest:
        start = rest.find('{')
        if start < 0:
            out.append(rest)
            break
        end = rest.find('}', start)
        if end < 0:
            raise SystemExit('%s: error: unclosed action in template %r'
                             % (PROG, text))
        out.append(rest[:start])
        inner = rest[start + 1:end]
        if inner.startswith('"') and inner.endswith('"') and len(inner) > 1:
            out.append(inner[1:-1])
        else:
            out.append(jsonpath(value, inner))
        rest = rest[end + 1:]
    return ''.join(out)


def jsonpath(value, expression):
    text = expression.strip()
    if text.startswith('{') and text.endswith('}'):
        text = text[1:-1]
    parts = [p.replace('\\.', '.') for p in re.split(r'(?<!\\)\.', text)
             if p]
    values = [value]
    for part in parts:
        match = re.match(r'^([^\[]*)(?:\[(\*|\d+)\])?$', part)
        key, index = match.group(1), match.group(2)
        nxt = []
        for v in values:
            v = v.get(key) if key and isinstance(v, dict) else (
                v if not key else None)
            if v is None:
                continue
            if index == '*':
                nxt.extend(v)
            elif index is not None:
                nxt.append(v[int(index)])
            else:
                nxt.append(v)
        values = nxt
    return ' '.join(v if isinstance(v, str) else json.dumps(v)
                    for v in values)


def show(obj, output):
    if output == 'json':
        print(json.dumps(obj, indent=4))
    elif output == 'yaml':
        import yaml  # only here and in apply: "version" stays light
        sys.stdout.write(yaml.safe_dump(obj, default_flow_style=False))
    elif output == 'name':
        items = obj.get('items', [obj])
        for item in items:
            print('%s/%s' % (item.get('kind', '').lower(),
                             item['metadata']['name']))
    elif output and output.startswith('jsonpath='):
        sys.stdout.write(template(obj, output[len('jsonpath='):]))
    else:
        items = obj.get('items', [obj])
        if items and all(i.get('kind', 'Node') == 'Node' and
                         'nodeInfo' in (i.get('status') or {})
                         for i in items):
            node_table(items)
            return
        print('NAME')
        for item in items:
            print(item['metadata']['name'])


def node_table(nodes):
    """``kubectl get nodes`` as kubectl prints it (AGE left out)."""
    rows = [('NAME', 'STATUS', 'ROLES', 'VERSION')]
    for node in nodes:
        ready = [c for c in node['status'].get('conditions') or ()
                 if c.get('type') == 'Ready']
        status = 'Ready' if ready and ready[0].get('status') == 'True' \
            else 'NotReady'
        roles = sorted(k.split('/', 1)[1] for k in
                       node['metadata'].get('labels') or {}
                       if k.startswith('node-role.kubernetes.io/'))
        rows.append((node['metadata']['name'], status,
                     ','.join(roles) or '<none>',
                     node['status']['nodeInfo'].get('kubeletVersion', '')))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print('   '.join(v.ljust(w) for v, w in zip(row, widths)).rstrip())


def load_documents(source):
    import yaml
    text = sys.stdin.read() if source == '-' else open(source).read()
    docs = []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        docs.extend(doc.get('items', []) if doc.get('kind', '').endswith(
            'List') else [doc])
    return docs


def apply(api, source, namespace):
    for obj in load_documents(source):
        path = object_path(obj, namespace)
        name = obj['metadata']['name']
        status, answer = api.request('POST', path, obj)
        if status == 409:
            api.call('PATCH', path + '/' + name, obj,
                     content_type='application/merge-patch+json')
            print('%s/%s configured' % (obj['kind'].lower(), name))
        elif status in (200, 201):
            print('%s/%s created' % (obj['kind'].lower(), name))
        else:
            raise client_mod.APIFailure(status, answer)


def run(words, opts):
    verb = words[0] if words else ''
    if verb == 'version':
        print('Client Version: %s\nKustomize Version: v5.7.1'
              % kube.kubernetes_version())
        return 0
    api = client_mod.Client.from_kubeconfig(opts['kubeconfig'])
    if verb == 'get' and opts['raw']:
        status, answer = api.request('GET', opts['raw'])
        if status != 200:
            raise client_mod.APIFailure(status, answer)
        print(answer if isinstance(answer, str) else json.dumps(answer))
        return 0
    if verb == 'get' and len(words) >= 2:
        name = words[2] if len(words) > 2 else None
        show(api.call('GET', resource_path(words[1], opts['namespace'],
                                           name)), opts['output'])
        return 0
    if verb == 'apply' and opts['file']:
        apply(api, opts['file'], opts['namespace'])
        return 0
    if verb == 'delete' and len(words) >= 3:
        api.call('DELETE', resource_path(words[1], opts['namespace'],
                                         words[2]))
        print('%s "%s" deleted' % (words[1], words[2]))
        return 0
    kube.fail(PROG, 'the lab stand-in does not support: %s'
              % ' '.join(words), 1)


def main(argv=None):
    words, opts = parse(sys.argv[1:] if argv is None else argv)
    try:
        return run(words, opts)
    except client_mod.APIFailure as err:
        body = err.body if isinstance(err.body, dict) else {}
        reason = body.get('reason', err.status)
        kube.fail('Error from server (%s)' % reason,
                  body.get('message', str(err)))
    except (OSError, KeyError, ValueError) as err:
        kube.fail(PROG, 'error: %s' % err)


if __name__ == '__main__':
    sys.exit(main())
