"""The lab's Ansible server setup script points the copied kubespray
stand-in at the lab's mirror of dl.k8s.io (kubespray's dl_k8s_io_url).

The written line is run in a real /bin/sh (into a temp dir instead of
/opt/kubespray) and the stand-in's role defaults are read by the real
ansible-playbook."""

import concurrent.futures
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import types

import yaml

from k8s_mgmt_lab.machines import ansible_server

DOWNLOADS = 'http://10.254.7.1:8088/dl'
VENV_BIN = '/opt/venv/bin'
ROLE_DEFAULTS = os.path.join(ansible_server.STANDIN_DIR, 'roles',
                             'lab_kubeadm', 'defaults', 'main')


def site_lines(script):
    return [line for line in script.splitlines()
            if ansible_server.DL_K8S_IO_URL_FILE in line]


def written(line, target):
    """What the script's line writes, run by /bin/sh into ``target``."""
    assert line.endswith('>' + ansible_server.DL_K8S_IO_URL_FILE)
    command = line[:-len(ansible_server.DL_K8S_IO_URL_FILE)] + \
        shlex.quote(str(target))
    subprocess.run(['/bin/sh', '-c', command], check=True)
    return target.read_text()


def test_downloads_become_kubesprays_dl_k8s_io_url(tmp_path):
    script = ansible_server.setup_script(VENV_BIN, downloads=DOWNLOADS)
    [line] = site_lines(script)
    words = shlex.split(line)
    assert words[:2] == ['printf', r'%s\n']
    assert words[-1] == '>' + ansible_server.DL_K8S_IO_URL_FILE
    assert 'dl_k8s_io_url: "%s"' % DOWNLOADS in words
    text = written(line, tmp_path / 'dl_k8s_io_url.yml')
    assert yaml.safe_load(text) == {'dl_k8s_io_url': DOWNLOADS}
    # After the copy of the stand-in, before the chown that hands it over.
    lines = script.splitlines()
    assert lines.index(line) > next(i for i, x in enumerate(lines)
                                    if x.startswith('cp -r '))
    assert lines.index(line) < next(i for i, x in enumerate(lines)
                                    if x.startswith('chown -R '))
    # The file it replaces is the stand-in's own.
    assert os.path.basename(ansible_server.DL_K8S_IO_URL_FILE) in \
        os.listdir(ROLE_DEFAULTS)


def test_a_url_with_shell_and_yaml_characters_arrives_as_it_is(tmp_path):
    marker = tmp_path / 'ran'
    url = ("http://h/dl'; touch %s; '\"$(touch %s)\" `touch %s` "
           "{a: b} # %%s \\" % (marker, marker, marker))
    [line] = site_lines(ansible_server.setup_script(VENV_BIN, url))
    text = written(line, tmp_path / 'out.yml')
    assert yaml.safe_load(text) == {'dl_k8s_io_url': url}
    assert not marker.exists()


def test_without_downloads_the_stand_in_keeps_dl_k8s_io():
    script = ansible_server.setup_script(VENV_BIN)
    assert site_lines(script) == []
    with open(os.path.join(ROLE_DEFAULTS, 'dl_k8s_io_url.yml')) as handle:
        assert yaml.safe_load(handle) == {
            'dl_k8s_io_url': 'https://dl.k8s.io'}


def test_start_hands_the_downloads_to_the_script():
    calls = []
    vms = types.SimpleNamespace(
        create=lambda *a: types.SimpleNamespace(ip=a[2],
                                                host_key_sha256='SHA256:x'),
        exec=lambda vm_id, argv, timeout: calls.append(argv),
        destroy=lambda vm_id: None)
    ansible_server.start(vms, '10.254.7.254', 'pw', downloads=DOWNLOADS)
    [argv] = calls
    assert site_lines(argv[-1]) == site_lines(
        ansible_server.setup_script(os.path.dirname(sys.executable),
                                    DOWNLOADS))
    assert len(site_lines(argv[-1])) == 1


def play(tmp_path, *extra):
    """kubespray's download URLs as the stand-in's role resolves them."""
    if not (tmp_path / 'roles').exists():
        shutil.copytree(os.path.join(ansible_server.STANDIN_DIR, 'roles'),
                        tmp_path / 'roles')
    (tmp_path / 'urls.yml').write_text(
        '- hosts: localhost\n'
        '  gather_facts: false\n'
        '  tasks:\n'
        '    - ansible.builtin.import_role:\n'
        '        name: lab_kubeadm\n'
        '        tasks_from: urls\n')
    (tmp_path / 'roles' / 'lab_kubeadm' / 'tasks' / 'urls.yml').write_text(
        '- ansible.builtin.copy:\n'
        '    dest: "{{ playbook_dir }}/urls.json"\n'
        '    content: "{{ {\'kubeadm\': kubeadm_download_url,\n'
        '                  \'kubelet\': kubelet_download_url,\n'
        '                  \'kubectl\': kubectl_download_url,\n'
        '                  \'bin_dir\': bin_dir} | to_json }}"\n'
        '    mode: "0644"\n')
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(tmp_path / 'roles'),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCALHOST_WARNING='False',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='False')
    subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
         '-c', 'local', '-i', 'localhost,', str(tmp_path / 'urls.yml')]
        + list(extra), check=True, cwd=str(tmp_path), env=env,
        capture_output=True, timeout=120)
    return yaml.safe_load((tmp_path / 'urls.json').read_text())


def test_ansible_reads_the_written_url_and_an_override_wins(tmp_path):
    [line] = site_lines(ansible_server.setup_script(VENV_BIN, DOWNLOADS))
    first, second = tmp_path / 'a', tmp_path / 'b'
    first.mkdir()
    second.mkdir()
    # The override's play needs nothing of the other two: it runs beside
    # them (each ansible-playbook start is over a second).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        override = pool.submit(play, second, '-e',
                               'dl_k8s_io_url=http://mirror/dl',
                               '-e', 'kube_version=v1.34.0')
        before, after = _first_then_written(line, first)
    assert before['kubeadm'] == \
        'https://dl.k8s.io/release/v1.35.1/bin/linux/amd64/kubeadm'
    assert after == {
        tool: '%s/release/v1.35.1/bin/linux/amd64/%s' % (DOWNLOADS, tool)
        for tool in ('kubeadm', 'kubelet', 'kubectl')} | {
            'bin_dir': '/usr/local/bin'}
    assert override.result()['kubectl'] == \
        'http://mirror/dl/release/v1.34.0/bin/linux/amd64/kubectl'


def _first_then_written(line, where):
    """The URLs before and after the setup script's line wrote the lab's
    download URL into the role's defaults."""
    before = play(where)
    written(line, where / 'roles' / 'lab_kubeadm' / 'defaults' / 'main' /
            'dl_k8s_io_url.yml')
    return before, play(where)


def test_the_ssh_user_is_let_through_closed_directories_in_the_vm():
    # A checkout made with mktemp -d under /var/tmp (0700): the SSH user
    # of the Ansible server VM could not reach its .venv's ansible-playbook.
    top = tempfile.mkdtemp(dir='/var/tmp')
    try:
        venv_bin = os.path.join(top, 'main', '.venv', 'bin')
        os.makedirs(venv_bin)
        os.chmod(top, 0o700)
        closed = ansible_server.closed_ancestors([venv_bin, '/tmp/x/y'])
        assert top in closed
        assert os.path.join(top, 'main') not in closed      # 0755
        assert not [p for p in closed if p.startswith('/tmp')]
        script = ansible_server.setup_script(venv_bin, closed=closed)
        lines = script.splitlines()
        chmods = [line for line in lines if line.startswith('chmod o+x ')]
        assert 'chmod o+x %s' % shlex.quote(top) in chmods
        # Before the tools are linked and tried as the SSH user.
        assert lines.index(chmods[-1]) < next(
            i for i, x in enumerate(lines) if x.startswith('su - '))
    finally:
        shutil.rmtree(top)


def test_the_default_covers_the_running_environment():
    closed = ansible_server.closed_ancestors(ansible_server._python_paths())
    script = ansible_server.setup_script(VENV_BIN)
    assert [line for line in script.splitlines()
            if line.startswith('chmod o+x ')] == [
        'chmod o+x %s' % shlex.quote(p) for p in closed]
