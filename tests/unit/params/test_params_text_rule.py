"""One rule for every string of a request: a length cap, and no character
that ends a log line or hides what is shown (fields.text_problem)."""

import copy
import json
import re

import pytest

from k8s_mgmt import context
from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.params import fields

import params_helpers as h

PEM = ('-----BEGIN OPENSSH PRIVATE KEY-----\r\nb3BlbnNzaC1rZXktdjEAAAAAKeyBody'
       '\r\n-----END OPENSSH PRIVATE KEY-----\n')
# Each refused kind of character: line breaks a log reader honours, the
# bidi and zero-width format characters, a lone surrogate, ASCII controls.
REFUSED = {
    '\u2028': 'a line separator', '\u2029': 'a paragraph separator',
    '\x85': 'a control character', '\ud800': 'a lone surrogate',
    '\u200b': 'a format character', '\u200e': 'a format character',
    '\u202e': 'a format character', '\u2066': 'a format character',
    '\ufeff': 'a format character', '\x1b': 'a control character',
    '\t': 'a control character', '\n': 'a control character',
}
# Strings of the request only Tacker reads; the driver never uses them.
TACKER_ONLY = ('vimConnectionInfo[].vimId',
               'extVirtualLinks[].extCps[].cpConfig[].cpProtocolData[].'
               'layerProtocol')
SECRET_FIELDS = ('password', 'ssh_password', 'ssh_private_key', 'http_proxy',
                 'https_proxy')


def _bodies():
    """The sample requests, with every optional string field given."""
    complex_ = h.sample('complex')
    root = complex_['additionalParams'][h.ROOT]
    root['proxy'].update({'http_proxy': 'http://u:p@proxy.example:3128',
                          'https_proxy': 'http://proxy.example:3128',
                          'no_proxy': 'localhost,10.0.0.0/8'})
    root['master_node']['cluster_fip_name'] = 'cluster_fip'
    del root['worker_node']['password']
    root['worker_node']['ssh_private_key'] = PEM
    kubespray = h.sample('kubespray')
    kubespray['additionalParams'][h.ROOT]['ansible'][
        'host_key_fingerprint'] = 'SHA256:' + 'A' * 42 + 'E'
    kubespray['additionalParams'][h.ROOT]['ansible']['ip_address'] = \
        '10.10.0.5'
    return [complex_, kubespray, h.sample('storage')]


def _leaves(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    elif isinstance(value, str):
        yield path


def _where(path):
    """The problem path the validator reports for a body path."""
    if path[:2] == ('additionalParams', h.ROOT):
        path = path[1:]
    text = ''
    for key in path:
        text += '[%d]' % key if isinstance(key, int) else '.' + key
    return text.lstrip('.')


def _tacker_only(path):
    return re.sub(r'\[\d+\]', '[]', _where(path)) in TACKER_ONLY


def _set(body, path, value):
    body = copy.deepcopy(body)
    target = body
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return body


def _get(body, path):
    for key in path:
        body = body[key]
    return body


def _one_line(problems):
    for where, message in problems:
        assert ('%s: %s' % (where, message)).isprintable(), (where, message)


def _cases():
    for body in _bodies():
        for path in _leaves(body):
            if not _tacker_only(path):
                yield body, path


CASES = list(_cases())


@pytest.mark.parametrize('char', list(REFUSED), ids=ascii)
def test_every_string_field_refuses_the_character(char):
    for body, path in CASES:
        value = _get(body, path)
        problems = h.problems_of(params.load_request,
                                 _set(body, path, value[:1] + char +
                                      value[1:]))
        where = _where(path)
        _one_line(problems)
        mine = [m for p, m in problems if p == where]
        assert mine, (where, problems)
        if char == '\n' and path[-1] == 'ssh_private_key':
            continue   # a key's lines are its own; this one is no PEM
        assert REFUSED[char] in mine[0], (where, mine)
        if path[-1] in SECRET_FIELDS:
            assert mine[0].endswith('(not shown)')
            assert value[1:] not in ' '.join(m for _, m in problems)
        else:
            assert 'U+%04X' % ord(char) in mine[0]


@pytest.mark.parametrize('char', ['\u2028', '\ud800', '\u202e'], ids=ascii)
def test_with_the_package_too(char, built_package):
    for body, path in CASES:
        value = _get(body, path)
        problems = h.problems_of(
            params.load_request, _set(body, path, value[:1] + char +
                                      value[1:]), package_dir=built_package)
        _one_line(problems)
        assert _where(path) in h.paths(problems)


def test_the_tacker_only_fields_are_read_by_nobody():
    # If the driver starts to read one, it must leave TACKER_ONLY.
    for body in _bodies():
        for path in _leaves(body):
            if _tacker_only(path):
                params.load_request(_set(body, path, 'x\u2028y'))


@pytest.mark.parametrize('field, limit', [
    ('master_node.ssh_cp_name', fields.MAX_TEXT),
    ('master_node.username', fields.MAX_TEXT),
    ('vim_name', fields.MAX_TEXT),
    ('kubernetes_version', fields.MAX_TEXT),
    ('master_node.pod_cidr', fields.MAX_TEXT),
    ('script_path', fields.MAX_PACKAGE_PATH),
    ('proxy.no_proxy', fields.MAX_NO_PROXY),
])
def test_each_kind_of_string_has_a_stated_cap(field, limit):
    where = h.ROOT + '.' + field
    problems = h.problems_of(params.load_cluster_params,
                             h.with_change(where, 'a' * (limit + 1)),
                             flavour='simple')
    assert [(p, m.split(':')[0]) for p, m in problems] == [
        (where, 'longer than %d characters' % limit)]
    _one_line(problems)


@pytest.mark.parametrize('field, value, limit', [
    ('master_node.password', 'p' * (fields.MAX_PASSWORD + 1),
     fields.MAX_PASSWORD),
    ('worker_node.ssh_private_key',
     PEM.replace('KeyBody', 'K' * fields.MAX_PRIVATE_KEY),
     fields.MAX_PRIVATE_KEY),
    ('proxy.http_proxy', 'http://proxy:3128/' + 'p' * fields.MAX_PROXY_URL,
     fields.MAX_PROXY_URL),
])
def test_secrets_have_a_cap_and_are_not_shown(field, value, limit):
    additional = h.with_change(h.ROOT + '.' + field, value)
    if 'ssh_private_key' in field:
        del additional[h.ROOT]['worker_node']['password']
    problems = h.problems_of(params.load_cluster_params, additional,
                             flavour='simple')
    [(where, message)] = problems
    assert where == h.ROOT + '.' + field
    assert message.endswith('longer than %d characters (not shown)' % limit)
    assert 'ppp' not in message and 'KKK' not in message


def test_a_key_keeps_its_line_breaks_and_the_vm_path_its_cap():
    additional = h.base_params()
    del additional[h.ROOT]['worker_node']['password']
    additional[h.ROOT]['worker_node']['ssh_private_key'] = PEM
    loaded = params.load_cluster_params(additional, flavour='simple')
    assert loaded.worker_node.ssh_private_key.reveal() == PEM
    storage = h.storage_section()
    storage['cinder_volume_setup_params'][0]['mount_to'] = '/' + 'v' * 4095
    additional[h.ROOT]['storage_server'] = storage
    problems = h.problems_of(params.load_cluster_params, additional,
                             flavour='simple')
    assert ('longer than 4095 characters'
            in dict(problems)[h.ROOT + '.storage_server.'
                              'cinder_volume_setup_params[0].mount_to'])


@pytest.mark.parametrize('name', ['ab\u00a0cd', 'ab\u3000cd'])
def test_a_resource_name_has_no_unicode_space_either(name):
    where = h.ROOT + '.master_node.ssh_cp_name'
    problems = h.problems_of(params.load_cluster_params,
                             h.with_change(where, name), flavour='simple')
    assert problems == [(where, 'a resource name has no whitespace: %r'
                         % name)]


def test_shown_values_are_escaped():
    problems = h.problems_of(params.load_cluster_params, h.with_change(
        h.ROOT + '.master_node.ssh_cp_name', 'cp\u2028ERROR forged'),
        flavour='simple')
    assert problems == [(h.ROOT + '.master_node.ssh_cp_name',
                         "holds a line separator (U+2028): "
                         "'cp\\u2028ERROR forged'")]


@pytest.mark.parametrize('flavour', ['simple\n', 'sim\u202eple', 'x' * 256])
def test_the_flavour_from_the_driver_entry(flavour):
    # Tacker passes flavour_id alone; load_request checks it as a field.
    problems = h.problems_of(params.load_cluster_params, h.base_params(),
                             flavour=flavour)
    assert h.paths(problems) == ['flavourId']
    _one_line(problems)


@pytest.mark.parametrize('instance_id', ['vnf-1\n', 'vnf\u2028', '../x',
                                         'x' * 129, None])
def test_a_vnf_instance_id_that_cannot_name_a_directory(instance_id):
    request = {'flavour_id': 'simple', 'additional_params': h.base_params()}
    problems = h.problems_of(context.build, 'instantiate',
                             'instantiate_start', None, {'id': instance_id},
                             request, None, {},
                             additional_params=request['additional_params'])
    assert h.paths(problems) == ['vnf_instance.id']
    _one_line(problems)


# -- k8s-mgmt validate: exit 2, one line, no traceback ---------------------

@pytest.mark.parametrize('path, char', [
    (('flavourId',), '\u2028'),
    (('additionalParams', h.ROOT, 'master_node', 'ssh_cp_name'), '\ud800'),
    (('additionalParams', h.ROOT, 'master_node', 'password'), '\u2029'),
    (('additionalParams', h.ROOT, 'script_path'), '\u202e'),
    (('extVirtualLinks', 0, 'extCps', 0, 'cpdId'), '\x85'),
], ids=lambda v: ascii(v) if isinstance(v, str) else v[-1])
def test_validate_cli_prints_one_line(path, char, tmp_path):
    body = h.sample('complex')
    value = _get(body, path)
    request = tmp_path / 'request.json'
    request.write_text(json.dumps(_set(body, path, value[:1] + char +
                                       value[1:])))
    done = h.validate_cli(str(request))
    assert done.returncode == 2
    [line] = done.stdout.splitlines()
    assert line.startswith(_where(path) + ': ') and ' holds ' in line
    assert line.isprintable()


def test_messages_only_ever_escape():
    with pytest.raises(exceptions.ValidationError) as info:
        params.load_request({'flavourId': 'x\u2028y', 'additionalParams': {
            'k8s_cluster_installation_param': {'\u2029key': 1}}})
    assert str(info.value).count('\n') == len(info.value.problems)
