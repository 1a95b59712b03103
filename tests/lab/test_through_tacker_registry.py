"""The registry VNF through the lab's real Tacker (v1), the operator's
way: the README's steps 3 to 5 with the registry flavour's request, then
``openstack vnflcm show`` for the registry's address and CA, a heal that
would empty its volume refused by the driver (FAILED_TEMP, given up),
one that keeps it, terminate and delete.

What only Tacker can show is checked here: the published metadata saved
by Tacker's own VnfInstance object and shown by its API, the refusal as
Tacker's operation error, and the registry's images and certificate kept
across a heal Tacker's infra driver runs.
"""

import json

from k8s_mgmt_lab.machines import image_registry

import readme_session
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-rg', bridge='k8slabtr',
                  tag='ktr', timeout=1800)
SUBNET = '10.254.220.0/24'
KEEP_VOLUME = {'additionalParams': {
    'tacker_extension_heal_include_block_storage': False}}


def published(session):
    """The instance's metadata k8sMgmtRegistry*, as Tacker shows it."""
    shown = readme_session.openstack_json(
        session.cli, 'vnflcm', 'show', session.instance_id())
    metadata = next(value for key, value in shown.items()
                    if 'metadata' in key)
    prefix = 'k8sMgmtRegistry'
    return {key[len(prefix)].lower() + key[len(prefix) + 1:]: value
            for key, value in metadata.items() if key.startswith(prefix)}


def registry_vnfc(session):
    [vnfc] = [v for v in session.vnfcs() if v['vduid'] == 'registry']
    return vnfc


def test_the_registry_vnf_through_tackers_api(assert_lab_clean, tmp_path):
    with k8s_mgmt.fresh(assert_lab_clean) as cli:
        cli('up', '--flavour', 'registry', '--subnet', SUBNET,
            '--own-control-plane')
        status = json.loads(cli('status', '--json').stdout)
        session = readme_session.Session(
            cli, str(tmp_path), status['tacker']['vim_id'],
            flavour='registry')
        for line in readme_session.command_lines():
            words = line.split()
            if words[:3] == ['openstack', 'vnflcm', 'scale']:
                break
            if words[:3] == ['openstack', 'vnflcm', 'instantiate']:
                session.lcm(session.substituted(line))
                continue
            out = session.bash(session.substituted(line))
            session._note(words, line, out)

        shown = published(session)
        base = 'https://' + shown['server']
        ca_pem = shown['caPem'].encode()
        assert shown['connectionType'] == '1'
        digest = image_registry.push(base, ca_pem, 'lab/hello', '1',
                                     {'hello.txt': b'through Tacker\n'})
        before = readme_session.server_id(registry_vnfc(session))

        # Tacker's default recreates the VNFC's volume: refused.
        heal = 'openstack vnflcm heal --vnfc-instance %s -- %s' % (
            registry_vnfc(session)['id'], session.instance_id())
        failed = session.lcm(heal, expect='FAILED_TEMP')
        detail = readme_session.openstack_json(
            cli, 'vnflcm', 'op', 'show', failed['id'])['error']['detail']
        assert 'Heal refused' in detail and 'every image in the registry ' \
            '%s' % base in detail, detail
        assert '\n' not in detail.strip() and 'Traceback' not in detail
        session.bash('openstack vnflcm op fail %s' % failed['id'])

        # The volume kept: a new VM, the same images and certificate.
        with open('%s/keep-volume.json' % tmp_path, 'w') as handle:
            json.dump(KEEP_VOLUME, handle)
        session.lcm(heal.replace(' -- ', ' --additional-param-file '
                                 'keep-volume.json -- '))
        assert readme_session.server_id(registry_vnfc(session)) != before
        again = published(session)
        assert (again['server'], again['caPem']) == (shown['server'],
                                                     shown['caPem'])
        assert image_registry.manifest_digest(base, ca_pem, 'lab/hello',
                                              '1') == digest

        session.lcm('openstack vnflcm terminate %s' % session.instance_id())
        session.bash('openstack vnflcm delete %s' % session.instance_id())
        assert not json.loads(cli('openstack', 'vnflcm', 'list', '-f',
                                  'json').stdout)
        # No Kubernetes VIM was ever registered for it.
        vims = readme_session.openstack_json(cli, 'vim', 'list')
        assert [v['type'] for v in vims] == ['openstack'], vims
