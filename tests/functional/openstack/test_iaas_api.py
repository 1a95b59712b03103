"""The stand-ins over real HTTP on loopback, without Keystone (tokens
known in advance) and with jobs run inline: each service's version
document, error body and microversion headers, what a member sees and an
admin sees, and the cross-service agreements a client can observe."""

import pytest
import requests

from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import serve

ADMIN = auth.Caller('admin-user', 'project-a', ('admin', 'member'))
MEMBER = auth.Caller('member-user', 'project-a', ('member',))
STRANGER = auth.Caller('other-user', 'project-b', ('member',))


class Provisioner(object):
    """No VM; a console a test may set (``consoles``, by server id)."""

    def __init__(self):
        self.consoles = {}

    def create_servers(self, specs):
        pass

    def delete_servers(self, server_ids):
        pass

    def console_output(self, server_id):
        return self.consoles.get(server_id, 'console of %s' % server_id)


class Client(object):
    def __init__(self, iaas, token):
        self.urls = iaas.endpoints()
        self.token = token

    def call(self, service, method, path, **kwargs):
        base = self.urls[service].replace('%(project_id)s', 'project-a')
        headers = dict(kwargs.pop('headers', {}))
        if self.token:
            headers['X-Auth-Token'] = self.token
        return requests.request(method, base.rstrip('/') + path,
                                headers=headers, timeout=10, **kwargs)


@pytest.fixture
def iaas(tmp_path):
    made = serve.Iaas(
        model.State('10.254.0.0/24', 2, str(tmp_path / 'iaas.json')),
        auth.StaticTokens({'admin-token': ADMIN, 'member-token': MEMBER,
                           'stranger-token': STRANGER}),
        provisioner=Provisioner(), run=lambda work, name: work()).start()
    yield made
    made.stop()


@pytest.fixture
def admin(iaas):
    return Client(iaas, 'admin-token')


def test_version_documents_need_no_token_and_the_rest_does(iaas):
    anyone = Client(iaas, None)
    nova = anyone.call('compute', 'GET', '').json()['version']
    assert (nova['version'], nova['min_version']) == ('2.96', '2.1')
    root = requests.get(iaas.endpoints()['volumev3'].split('/v3')[0] + '/',
                        timeout=10).json()['versions'][0]
    assert (root['id'], root['version'], root['min_version'],
            root['status']) == ('v3.0', '3.71', '3.0', 'CURRENT')
    refused = anyone.call('compute', 'GET', '/servers')
    assert refused.status_code == 401
    assert 'Keystone uri=' in refused.headers['WWW-Authenticate']
    assert Client(iaas, 'forged').call('network', 'GET',
                                       '/v2.0/ports').status_code == 401


def test_nova_echoes_the_microversion_and_refuses_one_it_lacks(admin):
    answer = admin.call('compute', 'GET', '/flavors', headers={
        'OpenStack-API-Version': 'compute 2.79'})
    assert answer.headers['OpenStack-API-Version'] == 'compute 2.79'
    assert answer.headers['X-OpenStack-Nova-API-Version'] == '2.79'
    assert 'OpenStack-API-Version' in answer.headers['Vary']
    assert admin.call('compute', 'GET', '/flavors', headers={
        'X-OpenStack-Nova-API-Version': '2.97'}).status_code == 406
    tiny = admin.call('compute', 'GET', '/flavors/1', headers={
        'X-OpenStack-Nova-API-Version': '2.1'}).json()['flavor']
    assert (tiny['name'], tiny['swap']) == ('m1.tiny', '')


def test_errors_have_each_services_shape(admin):
    missing = admin.call('compute', 'GET', '/flavors/m1.medium')
    assert missing.status_code == 404
    assert missing.json()['itemNotFound']['code'] == 404
    bad = admin.call('compute', 'POST', '/servers', data='{not json')
    assert bad.status_code == 400 and 'badRequest' in bad.json()
    port = admin.call('network', 'GET', '/v2.0/ports/nope')
    assert port.json()['NeutronError']['type'] == 'PortNotFound'
    volume = admin.call('volumev3', 'GET', '/volumes/nope')
    assert volume.json()['itemNotFound']['code'] == 404
    unknown = admin.call('compute', 'GET', '/os-keypairs')
    assert unknown.status_code == 404
    assert 'does not serve' in unknown.json()['itemNotFound']['message']
    wrong_method = admin.call('compute', 'PUT', '/flavors')
    assert wrong_method.status_code == 405
    assert wrong_method.json()['badMethod']['code'] == 405
    too_new = admin.call('volumev3', 'GET', '/volumes', headers={
        'OpenStack-API-Version': 'volume 3.72'})
    assert too_new.status_code == 406 and 'computeFault' in too_new.json()
    assert admin.call('compute', 'GET', '/os-availability-zone', headers={
        'OpenStack-API-Version': 'compute 2.97'}).status_code == 406


def test_a_server_port_and_volume_agree_across_the_services(admin, iaas):
    network = admin.call('network', 'GET', '/v2.0/networks', params={
        'name': 'lab-net', 'fields': 'id'}).json()['networks']
    assert list(network[0]) == ['id']
    made = admin.call('network', 'POST', '/v2.0/ports', json={'port': {
        'network_id': network[0]['id'],
        'fixed_ips': [{'ip_address': '10.254.0.20'}]}})
    assert made.status_code == 201
    port = made.json()['port']
    assert port['status'] == 'DOWN'
    again = admin.call('network', 'POST', '/v2.0/ports', json={'port': {
        'network_id': network[0]['id'],
        'fixed_ips': [{'ip_address': '10.254.0.20'}]}})
    assert again.status_code == 409
    assert again.json()['NeutronError']['type'] == \
        'IpAddressAlreadyAllocated'
    image = admin.call('image', 'GET', '/v2/images', params={
        'name': 'ubuntu-22.04-server-cloudimg-amd64'}).json()['images'][0]
    created = admin.call('compute', 'POST', '/servers', json={'server': {
        'name': 'vdu', 'imageRef': image['id'], 'flavorRef': '3',
        'networks': [{'port': port['id']}]}})
    assert created.status_code == 202
    server_id = created.json()['server']['id']
    server = admin.call('compute', 'GET', '/servers/' + server_id).json()[
        'server']
    assert server['status'] == 'ACTIVE'
    assert server['OS-EXT-SRV-ATTR:host'] == 'compute01'
    assert server['addresses']['lab-net'][0]['OS-EXT-IPS-MAC:mac_addr'] == \
        port['mac_address']
    as_member = Client(iaas, 'member-token').call(
        'compute', 'GET', '/servers/' + server_id).json()['server']
    assert 'OS-EXT-SRV-ATTR:host' not in as_member
    assert admin.call('network', 'GET', '/v2.0/ports/' + port['id']).json()[
        'port']['status'] == 'ACTIVE'

    volume = admin.call('volumev3', 'POST', '/volumes', json={
        'volume': {'size': 1, 'name': 'data'}}).json()['volume']
    attached = admin.call('compute', 'POST',
                          '/servers/%s/os-volume_attachments' % server_id,
                          json={'volumeAttachment': {'volumeId':
                                                     volume['id']}})
    assert attached.json()['volumeAttachment']['device'] == '/dev/vdb'
    shown = admin.call('volumev3', 'GET', '/volumes/' + volume['id']).json()[
        'volume']
    assert shown['status'] == 'in-use'
    assert shown['attachments'][0]['server_id'] == server_id
    assert admin.call('volumev3', 'DELETE', '/volumes/' + volume['id']
                      ).status_code == 400

    assert admin.call('compute', 'DELETE', '/servers/%s/os-interface/%s' % (
        server_id, port['id'])).status_code == 202
    server = admin.call('compute', 'GET', '/servers/' + server_id).json()[
        'server']
    assert server['addresses'] == {}
    assert admin.call('network', 'GET', '/v2.0/ports', params={
        'device_id': server_id}).json()['ports'] == []
    console = admin.call('compute', 'POST', '/servers/%s/action' % server_id,
                         json={'os-getConsoleOutput': {}})
    assert console.json()['output'] == 'console of ' + server_id
    assert admin.call('compute', 'POST', '/servers/%s/action' % server_id,
                      json={'os-stop': None}).status_code == 501
    assert admin.call('compute', 'POST', '/servers/%s/os-interface'
                      % server_id, json={'interfaceAttachment': {
                          'port_id': port['id']}}).status_code == 501
    assert admin.call('compute', 'DELETE',
                      '/servers/' + server_id).status_code == 204
    assert admin.call('compute', 'GET',
                      '/servers/' + server_id).status_code == 404
    assert admin.call('volumev3', 'GET', '/volumes/' + volume['id']).json()[
        'volume']['status'] == 'available'


def test_server_groups_speak_both_microversions(admin):
    old = admin.call('compute', 'POST', '/os-server-groups', json={
        'server_group': {'name': 'g', 'policies': ['anti-affinity']}},
        headers={'X-OpenStack-Nova-API-Version': '2.1'}).json()
    assert old['server_group']['policies'] == ['anti-affinity']
    new = admin.call('compute', 'GET', '/os-server-groups/%s'
                     % old['server_group']['id'], headers={
                         'OpenStack-API-Version': 'compute 2.64'}).json()
    assert new['server_group']['policy'] == 'anti-affinity'
    assert admin.call('compute', 'POST', '/os-server-groups', json={
        'server_group': {'name': 'g', 'policy': 'spread-out'}}, headers={
            'OpenStack-API-Version': 'compute 2.64'}).status_code == 400
    assert admin.call('image', 'GET', '/v2/schemas/image').json()[
        'name'] == 'image'


def test_a_port_keeps_its_allowed_address_pairs(admin):
    """As Heat asks for the masters' VIP (the sample's allowed_address_pairs):
    kept, shown with the port's MAC where none is given, updatable; a pair
    that is no address is refused."""
    network = admin.call('network', 'GET', '/v2.0/networks').json()[
        'networks'][0]['id']
    port = admin.call('network', 'POST', '/v2.0/ports', json={'port': {
        'network_id': network, 'allowed_address_pairs': [
            {'ip_address': '10.254.0.99'}]}}).json()['port']
    assert port['allowed_address_pairs'] == [{
        'ip_address': '10.254.0.99', 'mac_address': port['mac_address']}]
    changed = admin.call('network', 'PUT', '/v2.0/ports/' + port['id'],
                         json={'port': {'allowed_address_pairs': [
                             {'ip_address': '10.254.0.64/28',
                              'mac_address': 'fa:16:3e:00:00:01'}]}})
    assert admin.call('network', 'GET', '/v2.0/ports/' + port['id']).json()[
        'port']['allowed_address_pairs'] == changed.json()['port'][
            'allowed_address_pairs'] == [{'ip_address': '10.254.0.64/28',
                                          'mac_address': 'fa:16:3e:00:00:01'}]
    refused = admin.call('network', 'POST', '/v2.0/ports', json={'port': {
        'network_id': network, 'allowed_address_pairs': [{'ip': 'x'}]}})
    assert refused.status_code == 400
    assert refused.json()['NeutronError']['type'] == 'InvalidInput'


def test_malformed_requests_are_400s_not_500s(admin):
    """What a client gets wrong is its own error, said as the service
    says it; a 500 would name only an exception's type."""
    net = admin.call('network', 'GET', '/v2.0/networks').json()[
        'networks'][0]['id']
    made = admin.call('compute', 'POST', '/servers', json={'server': {
        'name': 'vdu', 'flavorRef': '1', 'networks': [{'uuid': net}]}}
    ).json()['server']
    wrong = [
        admin.call('compute', 'POST', '/servers/%s/action' % made['id'],
                   json={'os-getConsoleOutput': {'length': 'ten'}}),
        admin.call('compute', 'GET', '/servers?name=%28'),
        admin.call('network', 'GET', '/v2.0/ports?fixed_ips=10.254.0.10'),
        admin.call('compute', 'POST', '/servers', json={'server': {
            'name': 'vdu', 'flavorRef': '1', 'networks': ['not-a-dict']}}),
        admin.call('compute', 'POST', '/servers', json={
            'server': {'name': 'vdu', 'flavorRef': '1'},
            'os:scheduler_hints': ['not-a-dict']}),
        admin.call('network', 'POST', '/v2.0/ports', json={'port': {
            'network_id': net, 'fixed_ips': {'ip_address': 'x'}}}),
        admin.call('network', 'POST', '/v2.0/ports', data='[' * 100000),
    ]
    assert [answer.status_code for answer in wrong] == [400] * len(wrong)


def test_a_chunked_body_is_refused_and_not_read_as_a_request(admin):
    def chunks():
        yield b'{"port": {"network_id": "x"}}'

    answer = admin.call('network', 'POST', '/v2.0/ports', data=chunks(),
                        headers={'Content-Type': 'application/json'})
    assert answer.status_code == 411
    assert answer.headers.get('Connection') == 'close'


def test_a_server_group_is_its_projects(admin, iaas):
    """Another project's member neither sees nor deletes it, as Nova's
    policy makes it; its own project and an admin do."""
    made = admin.call('compute', 'POST', '/os-server-groups', json={
        'server_group': {'name': 'g', 'policies': ['affinity']}}).json()[
            'server_group']
    path = '/os-server-groups/' + made['id']
    stranger = Client(iaas, 'stranger-token')
    assert stranger.call('compute', 'GET', path).status_code == 404
    assert stranger.call('compute', 'DELETE', path).status_code == 404
    assert Client(iaas, 'member-token').call(
        'compute', 'GET', path).status_code == 200
    assert admin.call('compute', 'DELETE', path).status_code == 204


def _network(admin):
    return admin.call('network', 'GET', '/v2.0/networks').json()[
        'networks'][0]['id']


def test_console_output_gives_the_last_lines_asked_for(admin, iaas):
    """As Nova reads os-getConsoleOutput's ``length``: none, null or -1
    for all of it, N for the last N lines, 0 for none; an unknown server
    is a 404 naming the instance."""
    server_id = admin.call('compute', 'POST', '/servers', json={'server': {
        'name': 'vdu', 'flavorRef': '1', 'networks': [
            {'uuid': _network(admin)}]}}).json()['server']['id']
    text = ''.join('line %d\n' % n for n in range(4)) + 'vdu login: '
    iaas.compute.provisioner.consoles[server_id] = text

    def console(asked):
        answer = admin.call('compute', 'POST', '/servers/%s/action'
                            % server_id, json={'os-getConsoleOutput': asked})
        assert answer.status_code == 200, answer.text
        return answer.json()

    for asked in ({}, None, {'length': None}, {'length': -1}):
        assert console(asked) == {'output': text}, asked
    assert console({'length': 2}) == {'output': 'line 3\nvdu login: '}
    assert console({'length': '1'}) == {'output': 'vdu login: '}
    assert console({'length': 0}) == {'output': ''}
    missing = admin.call('compute', 'POST', '/servers/no-such-server/action',
                         json={'os-getConsoleOutput': {}})
    assert missing.status_code == 404
    assert missing.json() == {'itemNotFound': {
        'code': 404,
        'message': 'Instance no-such-server could not be found.'}}


def test_nova_and_cinder_agree_on_a_servers_volumes(admin):
    """A volume mapped at boot keeps the device asked for (vdc), one
    attached later takes the first free one (vdb); Cinder's attachments,
    Nova's volumes_attached and its os-volume_attachments say the same."""
    def volume(size):
        return admin.call('volumev3', 'POST', '/volumes', json={
            'volume': {'size': size}}).json()['volume']['id']

    mapped, attached = volume(1), volume(2)
    server_id = admin.call('compute', 'POST', '/servers', json={'server': {
        'name': 'vdu', 'flavorRef': '1',
        'networks': [{'uuid': _network(admin)}],
        'block_device_mapping_v2': [{
            'uuid': mapped, 'source_type': 'volume',
            'destination_type': 'volume', 'boot_index': -1,
            'device_name': 'vdc'}]}}).json()['server']['id']
    later = admin.call('compute', 'POST',
                       '/servers/%s/os-volume_attachments' % server_id,
                       json={'volumeAttachment': {'volumeId': attached}})
    assert later.json()['volumeAttachment']['device'] == '/dev/vdb'
    devices = {}
    for volume_id in (mapped, attached):
        shown = admin.call('volumev3', 'GET', '/volumes/' + volume_id).json()[
            'volume']
        assert shown['status'] == 'in-use'
        [attachment] = shown['attachments']
        assert set(attachment) == {'server_id', 'attachment_id',
                                   'attached_at', 'host_name', 'volume_id',
                                   'device', 'id'}
        assert attachment['server_id'] == server_id
        assert attachment['volume_id'] == attachment['id'] == volume_id
        devices[volume_id] = (attachment['device'],
                              attachment['attachment_id'])
    assert devices[mapped][0] == '/dev/vdc'
    assert devices[attached][0] == '/dev/vdb'
    server = admin.call('compute', 'GET', '/servers/' + server_id).json()[
        'server']
    assert sorted(v['id'] for v in server[
        'os-extended-volumes:volumes_attached']) == sorted([mapped,
                                                            attached])
    listed = admin.call('compute', 'GET', '/servers/%s/os-volume_attachments'
                        % server_id).json()['volumeAttachments']
    assert {a['volumeId']: (a['device'], a['attachment_id'])
            for a in listed} == devices
    assert all(a['serverId'] == server_id for a in listed)


def test_glance_filters_by_tag_as_glance_does(admin):
    # Tacker's v2 infra driver lists the images it made for an instance
    # by tag (the instance id); the lab's images have no tag, so none.
    def names(**params):
        return [i['name'] for i in admin.call(
            'image', 'GET', '/v2/images', params=params).json()['images']]
    assert 'ubuntu-22.04-server-cloudimg-amd64' in names()
    assert names(tag='67d55784-3f7a-4f19-9303-f680b9b50c76') == []
    # A filter the lab does not know is refused, not ignored.
    refused = admin.call('image', 'GET', '/v2/images',
                         params={'member_status': 'accepted'})
    assert refused.status_code == 400
