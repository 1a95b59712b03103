"""What a change of a VNF instance's information asks of this driver.

Tacker's v1 ``PATCH /vnflcm/v1/vnf_instances/{id}`` merges the request's
``metadata`` into the instance (a dict of strings) and then calls the
driver's ``modify_information_end``. An operator asks for a Kubernetes
upgrade with::

    {"metadata": {"k8sMgmtUpgrade": "1.36",
                  "k8sMgmtUpgradeMaxUnavailable": "2"}}

(``openstack vnflcm update VNF_INSTANCE_ID --I update.json``); and
``{"metadata": {"k8sMgmtCertificates": "check"}}`` reads every master's
certificates (recorded, and warned about when they expire soon). The target
is a minor (its newest patch in the repository) or an exact version; the
second key is optional. The driver removes the keys once the operation is
done; after a failure they stay, and the next change of the instance (the
same PATCH again) resumes it.

Under Tacker's v2 API the same metadata keys work in a PATCH, and a change
of the instance's package (``POST .../change_vnfpkg``) upgrades to the
version the new package names: ``kubernetes_version`` in the request's
additionalParams, else the package's ``Files/k8s-mgmt/kubernetes_version``
(``k8s-mgmt package build --kubernetes-version``).
"""

from k8s_mgmt import exceptions
from k8s_mgmt import kube_versions
from k8s_mgmt import tacker_objects
from k8s_mgmt.params import fields
from k8s_mgmt.params import package_version

UPGRADE_KEY = 'k8sMgmtUpgrade'
MAX_UNAVAILABLE_KEY = 'k8sMgmtUpgradeMaxUnavailable'
# "check": read every master's certificates, record and warn; "renew":
# renew them, one master at a time.
CERTIFICATES_KEY = 'k8sMgmtCertificates'
CERTIFICATE_ACTIONS = ('check', 'renew')
# Removed from the metadata once the operation they ask for is done.
KEYS = (UPGRADE_KEY, MAX_UNAVAILABLE_KEY, CERTIFICATES_KEY)
# The driver's own metadata keys (its sealed state k8sMgmtState, the
# registry's k8sMgmtRegistry* and any later one) start so; of them a PATCH
# may set only KEYS.
OWN_PREFIX = 'k8sMgmt'
PACKAGE_VERSION_FILE = package_version.FILE
# A v2 change_vnfpkg request's additionalParams of ours (beside Tacker's
# upgrade_type and vdu_params).
VERSION_PARAM = 'kubernetes_version'
MAX_UNAVAILABLE_PARAM = 'max_unavailable'


def metadata_of(vnf_instance):
    """The instance's metadata (v1 objects: ``vnf_metadata``; dicts:
    either name)."""
    found = tacker_objects.field(vnf_instance, 'vnf_metadata')
    if found is None and isinstance(vnf_instance, dict):
        found = vnf_instance.get('metadata')
    return found if isinstance(found, dict) else {}


def is_own_key(key):
    """True for a metadata key the driver writes and a PATCH may not."""
    return (isinstance(key, str) and key.startswith(OWN_PREFIX) and
            key != OWN_PREFIX and key not in KEYS)


def refuse_own_keys(patch):
    """ValidationError naming each key of the driver's own that the
    ``metadata`` of ``patch`` (a PATCH's body, dict or Tacker object) sets
    or removes: a replayed or deleted k8sMgmtState would roll the
    driver's state back or drop it."""
    metadata = tacker_objects.field(patch, 'metadata')
    if not isinstance(metadata, dict):
        return
    problems = [('metadata.%s' % fields.key_for_path(key),
                 'kept by k8s-mgmt: a PATCH may not set or remove it (of '
                 'the %s* keys a PATCH sets only %s)'
                 % (OWN_PREFIX, ', '.join(KEYS)))
                for key in metadata if is_own_key(key)]
    if problems:
        raise exceptions.ValidationError(problems)


def upgrade_of(vnf_instance):
    """The upgrade the instance's metadata asks for, as the hook's
    keyword arguments (``upgrade_target``, ``max_unavailable``), or None.
    ValidationError naming the key for a value that is no version or no
    whole number."""
    metadata = metadata_of(vnf_instance)
    target = metadata.get(UPGRADE_KEY)
    if target in (None, ''):
        return None
    problems = []
    if not isinstance(target, str) or kube_versions.parse(target) is None:
        problems.append(('metadata.%s' % UPGRADE_KEY, 'not a Kubernetes '
                         'version such as 1.36 or 1.36.1: %r' % (target,)))
    count = metadata.get(MAX_UNAVAILABLE_KEY)
    number = 0
    if count not in (None, ''):
        text = str(count)
        if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 100):
            problems.append(('metadata.%s' % MAX_UNAVAILABLE_KEY,
                             'expected a whole number from 1 to 100, got %r'
                             % (count,)))
        else:
            number = int(text)
    if problems:
        raise exceptions.ValidationError(problems)
    return {'upgrade_target': target.strip(), 'max_unavailable': number}


def asked(vnf_instance):
    """(operation, hook keyword arguments) of what the instance's metadata
    asks for ('upgrade', 'certs_check' or 'certs_renew'), or None. An
    upgrade asked beside a renewal runs alone: kubeadm upgrade renews the
    certificates it manages. ValidationError for a bad value."""
    wanted = upgrade_of(vnf_instance)
    action = certificates_of(vnf_instance)
    if wanted is not None:
        return 'upgrade', wanted
    if action is not None:
        return 'certs_' + action, {}
    return None


def change_package_of(additional_params, package_dir):
    """The upgrade a v2 change of package asks for, as the hook's keyword
    arguments, or None when neither the request's additionalParams nor
    the new package name a version. ValidationError naming the field."""
    params = additional_params if isinstance(additional_params, dict) \
        else {}
    target = params.get(VERSION_PARAM)
    problems = []
    field_name = 'additionalParams.%s' % VERSION_PARAM
    if target is None:
        target = package_version.read(package_dir)
    elif not isinstance(target, str) or kube_versions.parse(target) is None:
        problems.append((field_name, 'not a Kubernetes version such as '
                         '1.36 or 1.36.1: %r' % (target,)))
    count = params.get(MAX_UNAVAILABLE_PARAM)
    if count is not None and (isinstance(count, bool) or
                              not isinstance(count, int) or
                              not 1 <= count <= 100):
        problems.append(('additionalParams.%s' % MAX_UNAVAILABLE_PARAM,
                         'expected a whole number from 1 to 100, got %r'
                         % (count,)))
    if problems:
        raise exceptions.ValidationError(problems)
    if target is None:
        return None
    return {'upgrade_target': target.strip(), 'max_unavailable': count or 0}


def certificates_of(vnf_instance):
    """What the metadata asks of the certificates ("check"), or None;
    ValidationError for another value."""
    action = metadata_of(vnf_instance).get(CERTIFICATES_KEY)
    if action in (None, ''):
        return None
    if action not in CERTIFICATE_ACTIONS:
        raise exceptions.ValidationError([(
            'metadata.%s' % CERTIFICATES_KEY, 'expected "check" or "renew", '
            'got %r' % (action,))])
    return action
