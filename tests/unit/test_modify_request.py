"""What a change of the instance's information asks: an upgrade named in
its metadata, checked before anything runs."""

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import modify_request


def test_the_upgrade_keys_of_the_metadata():
    instance = {'id': 'i-1', 'vnf_metadata': {
        'k8sMgmtUpgrade': ' 1.36 ', 'k8sMgmtUpgradeMaxUnavailable': '2',
        'other': 'x'}}
    assert modify_request.upgrade_of(instance) == {
        'upgrade_target': '1.36', 'max_unavailable': 2}
    # A v2 instance keeps it under "metadata".
    found = modify_request.upgrade_of({'metadata': {
        'k8sMgmtUpgrade': '1.36.1'}})
    assert found == {'upgrade_target': '1.36.1', 'max_unavailable': 0}


@pytest.mark.parametrize('metadata', [{}, {'k8sMgmtUpgrade': ''},
                                      {'name': 'renamed'}])
def test_no_upgrade_asked(metadata):
    assert modify_request.upgrade_of({'vnf_metadata': metadata}) is None


@pytest.mark.parametrize('metadata, where, words', [
    ({'k8sMgmtUpgrade': 'latest'}, 'metadata.k8sMgmtUpgrade',
     'not a Kubernetes version such as 1.36 or 1.36.1'),
    ({'k8sMgmtUpgrade': '2.0'}, 'metadata.k8sMgmtUpgrade', 'not a'),
    ({'k8sMgmtUpgrade': '1.36', 'k8sMgmtUpgradeMaxUnavailable': '0'},
     'metadata.k8sMgmtUpgradeMaxUnavailable', 'a whole number from 1'),
    ({'k8sMgmtUpgrade': '1.36', 'k8sMgmtUpgradeMaxUnavailable': 'two'},
     'metadata.k8sMgmtUpgradeMaxUnavailable', 'a whole number from 1'),
])
def test_a_bad_value_names_its_key(metadata, where, words):
    with pytest.raises(exceptions.ValidationError) as err:
        modify_request.upgrade_of({'vnf_metadata': metadata})
    [(path, message)] = err.value.problems
    assert path == where and words in message


def test_the_driver_does_nothing_for_a_change_without_an_upgrade(caplog):
    import logging
    from k8s_mgmt.driver import KubernetesMgmtDriver
    driver = KubernetesMgmtDriver()
    with caplog.at_level(logging.INFO, logger='k8s_mgmt.driver'):
        driver.modify_information_end(None, {'id': 'i-1', 'vnf_metadata': {
            'name': 'x'}}, None)
    assert 'nothing for k8s-mgmt in this change' in caplog.text


def test_the_certificates_key():
    assert modify_request.certificates_of({'vnf_metadata': {
        'k8sMgmtCertificates': 'check'}}) == 'check'
    assert modify_request.certificates_of({'vnf_metadata': {}}) is None
    assert modify_request.certificates_of({'vnf_metadata': {
        'k8sMgmtCertificates': 'renew'}}) == 'renew'
    for value, words in (('rotate', 'expected "check" or "renew"'),):
        with pytest.raises(exceptions.ValidationError) as err:
            modify_request.certificates_of({'vnf_metadata': {
                'k8sMgmtCertificates': value}})
        [(path, message)] = err.value.problems
        assert path == 'metadata.k8sMgmtCertificates' and words in message


def test_what_the_metadata_asks_for():
    def asked(metadata):
        return modify_request.asked({'vnf_metadata': metadata})
    assert asked({'name': 'x'}) is None
    assert asked({'k8sMgmtCertificates': 'renew'}) == ('certs_renew', {})
    # kubeadm upgrade renews what it manages: the upgrade runs alone.
    assert asked({'k8sMgmtCertificates': 'renew', 'k8sMgmtUpgrade':
                  '1.36'}) == ('upgrade', {'upgrade_target': '1.36',
                                           'max_unavailable': 0})


@pytest.mark.parametrize('additional, version, expected', [
    ({}, None, None),
    ({}, '1.36\n', {'upgrade_target': '1.36', 'max_unavailable': 0}),
    ({'kubernetes_version': '1.36.1', 'max_unavailable': 3}, '1.36',
     {'upgrade_target': '1.36.1', 'max_unavailable': 3}),
])
def test_the_version_a_change_of_package_names(tmp_path, additional,
                                               version, expected):
    if version is not None:
        folder = tmp_path / 'Files' / 'k8s-mgmt'
        folder.mkdir(parents=True)
        (folder / 'kubernetes_version').write_text(version)
    assert modify_request.change_package_of(additional,
                                            str(tmp_path)) == expected


@pytest.mark.parametrize('additional, where', [
    ({'kubernetes_version': 136}, 'additionalParams.kubernetes_version'),
    ({'kubernetes_version': '1.36', 'max_unavailable': '2'},
     'additionalParams.max_unavailable'),
    ({'kubernetes_version': '1.36', 'max_unavailable': True},
     'additionalParams.max_unavailable'),
])
def test_a_bad_change_of_package_names_its_field(tmp_path, additional,
                                                 where):
    with pytest.raises(exceptions.ValidationError) as err:
        modify_request.change_package_of(additional, str(tmp_path))
    assert [path for path, _ in err.value.problems] == [where]


# -- a PATCH may not touch what the driver keeps in the metadata ----------

# What the driver writes: its sealed state, the registry it shows, and any
# later key of its k8sMgmt namespace.
OWN_KEYS = ['k8sMgmtState', 'k8sMgmtRegistryServer',
            'k8sMgmtRegistryCaSha256', 'k8sMgmtRegistryCaPem',
            'k8sMgmtRegistryConnectionType', 'k8sMgmtLater']
LEGITIMATE = [{'k8sMgmtUpgrade': '1.36', 'k8sMgmtUpgradeMaxUnavailable': '2'},
              {'k8sMgmtCertificates': 'check'}, {'k8sMgmtUpgrade': None},
              {'owner': 'team-a', 'k8sMgmt': 'x', 'K8sMgmtState': 'x'}, {}]


def _v1_start(metadata):
    from k8s_mgmt.driver import KubernetesMgmtDriver
    return KubernetesMgmtDriver().modify_information_start(
        None, {'id': 'i-1', 'vnf_metadata': {}}, {'metadata': metadata})


def _v2_start(metadata):
    from k8s_mgmt.v2 import modify
    return modify.modify_information_start({
        'request': {'metadata': metadata},
        'vnf_instance': {'id': 'i-1', 'metadata': {}}})


@pytest.mark.parametrize('start', [_v1_start, _v2_start], ids=['v1', 'v2'])
@pytest.mark.parametrize('key', OWN_KEYS)
@pytest.mark.parametrize('value', ['v1.0123abcd.gAAAA-replayed', None],
                         ids=['set', 'removed'])
def test_a_patch_of_the_drivers_own_keys_is_refused(start, key, value):
    with pytest.raises(exceptions.ValidationError) as err:
        start({'owner': 'team-a', key: value})
    [(path, message)] = err.value.problems
    assert path == 'metadata.' + key
    assert message.startswith('kept by k8s-mgmt: a PATCH may not set or '
                              'remove it')
    line = exceptions.one_line(err.value)
    assert '\n' not in line and 'metadata.' + key in line


@pytest.mark.parametrize('start', [_v1_start, _v2_start], ids=['v1', 'v2'])
@pytest.mark.parametrize('metadata', LEGITIMATE)
def test_day_two_keys_and_other_metadata_still_pass(start, metadata):
    assert start(metadata) is None


def test_a_forged_key_of_the_namespace_is_shown_escaped():
    with pytest.raises(exceptions.ValidationError) as err:
        _v2_start({'k8sMgmtState\nmetadata.x: ok': None})
    [(path, _)] = err.value.problems
    assert path == "metadata.['k8sMgmtState\\nmetadata.x: ok']"
