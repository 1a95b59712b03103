import subprocess
import sys

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import pytest

from k8s_mgmt import conf


def test_list_opts_covers_every_option_with_help():
    [(group, opts)] = conf.list_opts()
    assert group.name == 'k8s_mgmt'
    names = {o.name for o in opts}
    for expected in ('connect_deadline', 'command_timeout', 'host_key_policy',
                     'max_parallel_nodes', 'state_dir', 'kubernetes_version',
                     'playbook_timeout', 'probe_deadline'):
        assert expected in names
    for opt in opts:
        assert opt.help and len(opt.help) > 20, opt.name


def test_options_are_set_through_the_oslo_fixture():
    fix = config_fixture.Config(conf.CONF)
    fix.setUp()
    try:
        fix.config(group='k8s_mgmt', max_parallel_nodes=3)
        assert conf.CONF.k8s_mgmt.max_parallel_nodes == 3
        with pytest.raises(ValueError):
            fix.config(group='k8s_mgmt', host_key_policy='accept-anything')
    finally:
        fix.cleanUp()


def test_bad_kubernetes_version_is_refused():
    local = cfg.ConfigOpts()
    conf.register_opts(local)
    with pytest.raises(ValueError):
        local.set_override('kubernetes_version', 'latest', group='k8s_mgmt')


def test_an_override_in_another_configopts_stays_there():
    """oslo.config keeps overrides in the group object a ConfigOpts was
    given: a shared one let a test's override reach the global CONF."""
    local = cfg.ConfigOpts()
    conf.register_opts(local)
    local.set_override('kubernetes_version', '1.37', group='k8s_mgmt')
    conf.CONF.clear_override('state_dir', 'k8s_mgmt')   # clears the cache
    assert local.k8s_mgmt.kubernetes_version == '1.37'
    assert conf.CONF.k8s_mgmt.kubernetes_version == conf.DEFAULT_K8S_VERSION


def test_config_generator_finds_our_entry_point(tmp_path):
    out = tmp_path / 'k8s_mgmt.conf.sample'
    subprocess.run([sys.executable, '-m', 'oslo_config.generator',
                    '--namespace', 'k8s_mgmt', '--output-file', str(out)],
                   check=True)
    text = out.read_text()
    assert '[k8s_mgmt]' in text and 'host_key_policy' in text
