"""kubectl stand-in: the commands the node scripts (and an operator poking at
a lab node) use: ``version --client``, ``get --raw``, ``get`` with ``-o
json|yaml|name|jsonpath=``, ``apply -f`` and ``delete``.

Kinds and resource names are mapped to the API's paths as kubectl maps
them, through the API server's discovery (so a custom resource is found
once its CustomResourceDefinition is in); the built-in resources, which
the stand-in API server serves from the same table, without asking.
``apply`` is kubectl's client-side apply: each object created with its
``last-applied-configuration`` annotation, or patched with the three-way
merge of that, the file and the object (nothing sent when nothing
changes); an object whose kind the server does not serve is an error
that does not stop the others, and the command then exits 1."""

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
         'ds': 'daemonsets', 'crd': 'customresourcedefinitions',
         'crds': 'customresourcedefinitions', 'sts': 'statefulsets',
         'rs': 'replicasets', 'ev': 'events', 'sc': 'storageclasses'}


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


LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


class Mapping(object):
    """A resource as kubectl addresses it: its collection's path under
    ``namespace`` (None: cluster-scoped) and its kind."""

    def __init__(self, group, version, plural, kind, namespaced):
        self.group, self.version, self.plural = group, version, plural
        self.kind, self.namespaced = kind, namespaced

    def path(self, namespace, name=None):
        base = '/apis/%s/%s' % (self.group, self.version) if self.group \
            else '/api/' + self.version
        if self.namespaced:
            base += '/namespaces/%s' % (namespace or 'default')
        return base + '/' + self.plural + ('/' + name if name else '')

    def shown(self, name):
        """How kubectl names an object of it: ``kind.group/name``."""
        kind = self.kind.lower()
        return '%s%s/%s' % (kind, '.' + self.group if self.group else '',
                            name)


def _builtin(plural):
    group, version, kind, namespaced = objects.RESOURCES[plural]
    return Mapping(group, version, plural, kind, namespaced)


class Mapper(object):
    """kubectl's REST mapper: discovery, asked once per group version."""

    def __init__(self, api):
        self.api = api
        self._lists = {}

    def _resources(self, group_version):
        if group_version not in self._lists:
            path = ('/apis/' + group_version if '/' in group_version
                    else '/api/' + group_version)
            status, answer = self.api.request('GET', path)
            if status == 404:
                self._lists[group_version] = []
            elif status != 200:
                raise client_mod.APIFailure(status, answer)
            else:
                self._lists[group_version] = [
                    r for r in answer.get('resources') or ()
                    if '/' not in r['name']]
        return self._lists[group_version]

    def for_kind(self, api_version, kind):
        """The Mapping of ``kind`` in ``api_version``, or None."""
        found = objects.builtin_kind(api_version, kind)
        if found is not None:
            return _builtin(found.plural)
        group, _, version = api_version.rpartition('/')
        for entry in self._resources(api_version):
            if entry.get('kind') == kind:
                return Mapping(group, version, entry['name'], kind,
                               entry['namespaced'])
        return None

    def for_word(self, word):
        """The Mapping of a resource as a user names it (plural, singular,
        short name or kind, optionally ``.group``), or None."""
        lower = word.lower()
        plural = SHORT.get(lower, lower)
        if plural in objects.RESOURCES:
            return _builtin(plural)
        for entry in objects.RESOURCES.values():
            if entry[2].lower() == lower:
                return _builtin(objects.KIND_PLURAL[entry[2]])
        status, groups = self.api.request('GET', '/apis')
        if status != 200:
            raise client_mod.APIFailure(status, groups)
        for group in groups.get('groups') or ():
            preferred = group['preferredVersion']['groupVersion']
            name = group['name']
            for entry in self._resources(preferred):
                words = {entry['name'], entry.get('singularName', ''),
                         entry['kind'].lower()}
                words |= set(entry.get('shortNames') or ())
                if lower in words or lower in {
                        w + '.' + name for w in words if w}:
                    return Mapping(name, group['preferredVersion']['version'],
                                   entry['name'], entry['kind'],
                                   entry['namespaced'])
        return None


def resource_path(mapper, kind_word, namespace, name=None):
    found = mapper.for_word(kind_word)
    if found is None:
        raise SystemExit('error: the server doesn\'t have a resource type '
                         '"%s"' % kind_word)
    return found.path(namespace, name)


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
    loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
    text = sys.stdin.read() if source == '-' else open(source).read()
    docs = []
    for doc in yaml.load_all(text, Loader=loader):
        if not doc:
            continue
        docs.extend(doc.get('items', []) if doc.get('kind', '').endswith(
            'List') else [doc])
    return docs


def three_way(original, modified, current):
    """The JSON merge patch of client-side apply: what the file
    (``modified``) sets that ``current`` lacks or has otherwise, and null
    for what the last apply (``original``) set and the file no longer
    does; {} when nothing changes."""
    patch = {}
    for key in original if isinstance(original, dict) else ():
        if key not in modified and key in current:
            patch[key] = None
    for key, value in modified.items():
        now = current.get(key)
        if isinstance(value, dict) and isinstance(now, dict):
            sub = three_way((original or {}).get(key) or {}, value, now)
            if sub:
                patch[key] = sub
        elif value != now:
            patch[key] = value
    return patch


def _last_applied(obj):
    """The annotation's value: the object as in the file, without the
    annotation, as JSON (kubectl's own shape: sorted keys, compact, a
    newline)."""
    import copy
    obj = copy.deepcopy(obj)
    annotations = obj.get('metadata', {}).get('annotations') or {}
    annotations.pop(LAST_APPLIED, None)
    if not annotations:
        obj.get('metadata', {}).pop('annotations', None)
    return json.dumps(obj, sort_keys=True, separators=(',', ':')) + '\n'


def _apply_one(api, mapping, obj, namespace):
    """Create or patch one object; what kubectl prints of it."""
    name = obj['metadata']['name']
    path = mapping.path(namespace)
    applied = _last_applied(obj)
    sent = json.loads(applied)
    sent['metadata'].setdefault('annotations', {})[LAST_APPLIED] = applied
    status, answer = api.request('POST', path, sent)
    if status in (200, 201):
        return '%s created' % mapping.shown(name)
    if status != 409:
        raise client_mod.APIFailure(status, answer)
    current = api.call('GET', path + '/' + name)
    before = (current.get('metadata', {}).get('annotations') or {}).get(
        LAST_APPLIED)
    patch = three_way(json.loads(before) if before else {}, sent, current)
    if not patch:
        return '%s unchanged' % mapping.shown(name)
    api.call('PATCH', path + '/' + name, patch,
             content_type='application/merge-patch+json')
    return '%s configured' % mapping.shown(name)


def apply(api, source, namespace):
    """kubectl apply -f: every object of ``source``; the errors of those
    that could not be applied, for the caller to report."""
    mapper = Mapper(api)
    errors = []
    for obj in load_documents(source):
        kind, api_version = obj.get('kind'), obj.get('apiVersion')
        meta = obj.get('metadata') or {}
        name = meta.get('name', '')
        if not kind or not api_version:
            errors.append('error: error validating "%s": error validating '
                          'data: [apiVersion not set, kind not set]'
                          % source)
            continue
        mapping = mapper.for_kind(api_version, kind)
        if mapping is None:
            errors.append(
                'error: resource mapping not found for name: "%s" '
                'namespace: "%s" from "%s": no matches for kind "%s" in '
                'version "%s"\nensure CRDs are installed first'
                % (name, meta.get('namespace') or namespace or '', source,
                   kind, api_version))
            continue
        target = None
        if mapping.namespaced:
            target = meta.get('namespace') or namespace or 'default'
            if namespace and meta.get('namespace') and \
                    meta['namespace'] != namespace:
                errors.append('error: the namespace from the provided '
                              'object "%s" does not match the namespace '
                              '"%s". You must pass \'--namespace=%s\' to '
                              'perform this operation.'
                              % (meta['namespace'], namespace,
                                 meta['namespace']))
                continue
            obj = dict(obj, metadata=dict(meta, namespace=target))
        try:
            print(_apply_one(api, mapping, obj, target))
        except client_mod.APIFailure as err:
            body = err.body if isinstance(err.body, dict) else {}
            errors.append('Error from server (%s): error when applying '
                          '"%s": %s' % (body.get('reason', err.status),
                                        source, body.get('message', err)))
    return errors


def run(words, opts):
    verb = words[0] if words else ''
    if verb == 'version':
        print('Client Version: %s\nKustomize Version: v5.7.1'
              % kube.kubernetes_version())
        return 0
    # One connection for the command's requests, as kubectl keeps one.
    api = client_mod.Client.from_kubeconfig(opts['kubeconfig'],
                                            keep_alive=True)
    if verb == 'get' and opts['raw']:
        status, answer = api.request('GET', opts['raw'])
        if status != 200:
            raise client_mod.APIFailure(status, answer)
        print(answer if isinstance(answer, str) else json.dumps(answer))
        return 0
    if verb == 'get' and len(words) >= 2:
        name = words[2] if len(words) > 2 else None
        show(api.call('GET', resource_path(Mapper(api), words[1],
                                           opts['namespace'], name)),
             opts['output'])
        return 0
    if verb == 'apply' and opts['file']:
        errors = apply(api, opts['file'], opts['namespace'])
        for error in errors:
            sys.stderr.write(error + '\n')
        return 1 if errors else 0
    if verb == 'delete' and len(words) >= 3:
        api.call('DELETE', resource_path(Mapper(api), words[1],
                                         opts['namespace'], words[2]))
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
