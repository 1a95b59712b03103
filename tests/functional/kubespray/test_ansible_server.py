"""AnsibleServer and playbook runs with real ansible-core over real OpenSSH.

See conftest.py for the site: one sshd on loopback is the Ansible server
and every node; the cluster's key pair is made on the server and
authorized on the nodes, and host keys come from the driver's pins.
"""

import dataclasses
import stat
import subprocess
import time

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.ansible import inventory
from k8s_mgmt.ansible import playbook
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.ssh import hostkeys
from k8s_mgmt.ssh.command import Command
from tests.helpers import openssh

HOSTILE = '{{ 6 * 7 }} $(touch /tmp/x) \'q\' "d" a=b  spaced\ttab ünï'


def test_a_run_streams_events_and_keeps_extra_vars_literal(site):
    out = site.tmp / 'note.txt'
    name = site.write_playbook('ok.yml', """
- name: say hello
  ping:
- name: write the note
  copy:
    content: "{{ note }}"
    dest: "{{ out_file }}"
  run_once: true
- name: slow down
  command: sleep 1
""")
    seen = []

    def on_event(event):
        seen.append((time.monotonic(), event))

    result = site.cluster.run(playbook.PlaybookCall(
        name, extra_vars=(('note', HOSTILE), ('out_file', str(out)))),
        on_event=on_event)
    ended = time.monotonic()
    starts = [(t, e['task']) for t, e in seen if e['event'] == 'task_start']
    assert [task for _, task in starts] == ['say hello', 'write the note',
                                            'slow down']
    # Streamed: the first task start arrived well before the run ended.
    assert ended - starts[0][0] > 0.8
    assert result.touched == {'master1', 'worker1', 'worker2'}
    assert result.recap['worker2']['ok'] == 3 or \
        result.recap['worker2']['changed'] >= 1
    assert result.failures == ()
    # Neither split at spaces nor rendered as a template.
    assert out.read_text() == HOSTILE


def test_b_a_failing_task_names_host_and_task(site):
    name = site.write_playbook('fail.yml', """
- name: reach every node
  ping:
- name: break worker1
  fail:
    msg: worker1 is broken on purpose
  when: inventory_hostname == 'worker1'
""")
    with pytest.raises(playbook.PlaybookFailed) as info:
        site.cluster.run(playbook.PlaybookCall(name))
    err = info.value
    assert [(f.host, f.task) for f in err.failures] == [
        ('worker1', 'break worker1')]
    text = str(err)
    assert 'fail.yml failed (exit status 2)' in text
    assert 'worker1: TASK break worker1: worker1 is broken on purpose' \
        in text
    assert 'master1' not in text
    assert err.result.recap['worker1']['failed'] == 1


def test_c_host_keys_are_checked_despite_kubesprays_ansible_cfg(site):
    cluster = site.new_cluster('wrong-key')
    _, other_public = openssh.ed25519_pair()
    key_type, key = other_public.split()[:2]
    cluster.write_known_hosts(['[127.0.0.1]:%d %s %s'
                               % (site.sshd.port, key_type, key)])
    name = site.write_playbook('reach.yml', """
- name: reach every node
  ping:
""")
    try:
        with pytest.raises(playbook.PlaybookFailed) as info:
            cluster.run(playbook.PlaybookCall(name))
        err = info.value
        assert sorted(f.host for f in err.failures) == [
            'master1', 'worker1', 'worker2']
        assert all(c['unreachable'] == 1
                   for c in err.result.recap.values())
        assert 'Host key verification failed' in str(err)
        # With the pinned keys the same run goes through.
        cluster.write_known_hosts(ansible_server.known_hosts_lines(
            site.nodes, site.store))
        assert cluster.run(playbook.PlaybookCall(name)).touched == {
            'master1', 'worker1', 'worker2'}
    finally:
        cluster.remove()


def test_d_limit_touches_only_the_named_host(site):
    name = site.write_playbook('reach.yml', """
- name: reach every node
  ping:
""")
    result = site.cluster.run(playbook.PlaybookCall(name,
                                                    limit=('worker2',)))
    assert result.touched == {'worker2'}


def test_e_remove_deletes_the_directory_and_refuses_other_paths(site):
    cluster = site.new_cluster('to-remove')
    path = site.inv / 'k8s-mgmt-to-remove'
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for name in ('hosts.yaml', 'known_hosts', 'id_ed25519'):
        assert stat.S_IMODE((path / name).stat().st_mode) == 0o600, name
    plugin = path / 'callback_plugins' / 'k8s_mgmt_events.py'
    assert stat.S_IMODE(plugin.stat().st_mode) == 0o600
    cluster.inventory_dir = str(site.inv)
    with pytest.raises(exceptions.MgmtDriverError) as info:
        cluster.remove()
    assert 'refusing to delete' in str(info.value)
    assert path.exists()
    cluster.inventory_dir = str(path)
    cluster.remove()
    assert not path.exists()
    assert (site.inv / 'k8s-mgmt-test-instance').exists()


def test_f_the_deadline_stops_a_hanging_playbook(site):
    name = site.write_playbook('hang.yml', """
- name: quick
  ping:
- name: wait forever
  shell: sleep 3600; echo k8s-mgmt-hang-marker
""")
    started = time.monotonic()
    with pytest.raises(playbook.PlaybookTimeout) as info:
        site.cluster.run(playbook.PlaybookCall(name), timeout=3)
    assert time.monotonic() - started < 20
    text = str(info.value)
    assert 'hang.yml did not finish within 3 s' in text
    assert 'last task started: wait forever' in text
    # Stopped on the Ansible server, not just abandoned.
    assert openssh.wait_until(
        lambda: not openssh.processes_with(site.cluster.inventory_path),
        deadline=15)


def test_g_authorize_key_command_is_idempotent(site):
    keys = site.home / '.ssh' / 'authorized_keys'
    public = site.cluster.ensure_key_pair()
    assert public == site.cluster.ensure_key_pair()  # the same pair
    keys.write_text(keys.read_text() + 'ssh-ed25519 AAAAother no-newline')
    for _ in range(3):
        site.session.run(ansible_server.authorize_key_command(public))
    lines = keys.read_text().splitlines()
    assert lines.count(public) == 1
    assert 'ssh-ed25519 AAAAother no-newline' in lines
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o700


def test_the_ansible_servers_key_is_verified_then_pinned_by_address(site):
    store = hostkeys.HostKeyStore(str(site.tmp / 'pins2' / 'keys.json'))
    unverified = dataclasses.replace(site.params, host_key_fingerprint=None)
    with pytest.raises(hostkeys.HostKeyNotPinned):
        server_trust.open_session(site.target, site.params, store,
                                  policy=hostkeys.POLICY_STRICT)
    with pytest.raises(server_trust.NothingToVerify):
        server_trust.open_session(site.target, unverified, store,
                                  policy=hostkeys.POLICY_CONSOLE)
    # What the refusal tells the operator to run gives the same print.
    scan = subprocess.run(
        'ssh-keyscan -p %d -t ed25519 127.0.0.1 | ssh-keygen -lf -'
        % site.sshd.port, shell=True, capture_output=True, text=True,
        timeout=30)
    assert scan.stdout.split()[1] == site.params.host_key_fingerprint
    with server_trust.open_session(site.target, site.params, store,
                                   policy=hostkeys.POLICY_CONSOLE) as session:
        assert session.run(Command('true')).ok
    pin = store.get('127.0.0.1:%d' % site.sshd.port)
    assert pin['verified'] == hostkeys.VERIFIED_FINGERPRINT
    assert pin['node'] == 'ansible-server'
    # Pinned: the pin decides from now on, fingerprint or not.
    with server_trust.open_session(site.target, unverified, store,
                                   policy=hostkeys.POLICY_CONSOLE) as session:
        assert session.run(Command('true')).ok


def test_inventory_on_the_server_is_the_yaml_we_built(site):
    text = (site.inv / 'k8s-mgmt-test-instance' / 'hosts.yaml').read_text()
    assert text.startswith('# kubespray inventory written by k8s-mgmt')
    assert inventory.host_names(yaml.safe_load(text)) == [
        'master1', 'worker1', 'worker2']
