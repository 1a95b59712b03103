"""Validation of ``additionalParams`` into a :class:`ClusterParams`.

Every problem is collected, none stops the others from being found; the
caller raises one :class:`~k8s_mgmt.exceptions.ValidationError` with all of
them. Paths are snake_case and relative to ``additionalParams``
(``k8s_cluster_installation_param.master_node.pod_cidr``), whichever casing
the input used.

What the node scripts accept (Kubernetes minors, IPv4 only, the proxy URL
grammar, paths on a VM) is defined in :mod:`k8s_mgmt.accepted`.
The placeholders of Tacker's sample requests that would fail on the VMs (a
proxy port ``port1``) are problems. Leniencies, each with a warning:

* CIDRs with host bits set (``192.168.3.0/16``) are normalised to their
  network (the scripts get the network).
* In the kubespray (``ansible``) mode the install script does not build
  the nodes, so ``script_path`` is not required and an empty one is
  ignored; an empty ``kubespray_root_path``/``transferring_inventory_path``
  or the unspecified address ``0.0.0.0`` are recorded in
  ``AnsibleParams.placeholders``: the kubespray driver refuses to run while
  any remain (``k8s_mgmt.kubespray.driver``).
"""

import functools

from oslo_log import log as logging

from k8s_mgmt import tacker_settings
from k8s_mgmt.params import addons
from k8s_mgmt.params import ansible_checks
from k8s_mgmt.params import cni as cni_params
from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params import nfs_exports
from k8s_mgmt.params import overlap
from k8s_mgmt.params import package_checks
from k8s_mgmt.params import pv_manifests
from k8s_mgmt.params import registry_vnf
from k8s_mgmt.params import request_body
from k8s_mgmt.params.reader import child
from k8s_mgmt.params.fields import key_for_path
from k8s_mgmt.params.reader import SectionReader

LOG = logging.getLogger(__name__)

ROOT = 'k8s_cluster_installation_param'

# additionalParams keys that Tacker itself (or its other drivers) reads.
TACKER_KEYS = frozenset([
    request_body.USER_DATA, request_body.USER_DATA_CLASS,
    'lcm-kubernetes-def-files', 'lcm-operation-coordinate-old-vnf',
    'lcm-operation-coordinate-old-vnf-class',
    'lcm-operation-coordinate-new-vnf',
    'lcm-operation-coordinate-new-vnf-class',
    'namespace', 'use_helm', 'using_helm_install_param',
    'helm_replica_values', 'vdu_params', 'nfv',
    # A v2 change of package (change_vnfpkg) must name it.
    'upgrade_type',
    # A VNFC heal keeps the VDU's Cinder volumes when this is false.
    'tacker_extension_heal_include_block_storage',
    # The v1 LCM controller's _scale sets both ("False" unless given) in
    # every ScaleVnfRequest's additionalParams.
    'is_reverse', 'is_auto',
])

# Per-request options (booleans) and the operations that read them.
OPERATION_OPTIONS = {'force_drain': ('scale', 'heal', 'upgrade'),
                     # The operator accepts that a heal empties the
                     # storage server's volume (see storage_heal.py).
                     'storage_volume_recreate': ('heal',)}

_NODE_SPEC = {
    'aspect_id': fields.name, 'ssh_cp_name': fields.name,
    'nic_cp_name': fields.name, 'username': fields.username,
    'password': fields.secret, 'ssh_private_key': fields.private_key,
}
_MASTER_SPEC = dict(_NODE_SPEC, pod_cidr=fields.cidr,
                    cluster_cidr=fields.cidr, cluster_cp_name=fields.name,
                    cluster_fip_name=fields.name)
_PROXY_SPEC = {
    'http_proxy': fields.proxy_url, 'https_proxy': fields.proxy_url,
    'no_proxy': fields.no_proxy, 'k8s_node_cidr': fields.cidr,
}
_STORAGE_SPEC = {
    'ssh_cp_name': fields.name, 'username': fields.username,
    'password': fields.secret, 'ssh_private_key': fields.private_key,
    'allow_wide_export': fields.boolean,
}
_STORAGE_LISTS = ('cinder_volume_setup_params', 'nfs_server_setup_params')
_VOLUME_SPEC = {'volume_resource_id': fields.name,
                'mount_to': nfs_exports.data_path}
_EXPORT_SPEC = {'export_dir': nfs_exports.data_path,
                'export_to': nfs_exports.export_to,
                'no_root_squash': fields.boolean}
_CONNECT_FIELDS = ('ssh_cp_name', 'nic_cp_name', 'username')


def _options(top):
    """The per-request options the request set, for ClusterParams."""
    return {name: top[name] for name in OPERATION_OPTIONS if name in top}


class ClusterValidator(SectionReader):
    """One validation run: ``run(additional_params)`` -> ClusterParams."""

    def __init__(self, report, operation, flavour=None, package_dir=None):
        super().__init__(report)
        self.operation = operation
        self.flavour = flavour
        self.package_dir = package_dir
        self.needs_nodes = operation in ('instantiate', 'heal', 'scale',
                                         'upgrade', 'certs')

    def run(self, additional_params, default_version, ext_cps=()):
        """``ext_cps``: the request's ExtCps, checked against the VNFD
        with the package (see :mod:`k8s_mgmt.params.package_checks`)."""
        # Tacker's flavour_id reaches log lines and a directory name.
        if self.flavour is not None and fields.string(
                self.report, 'flavourId', self.flavour) is None:
            self.flavour = None
        top = self._top_level(additional_params)
        params = (self._params(top, default_version) if top is not None
                  else None)
        if self.package_dir is not None:
            # Terminate needs neither the UserData nor the nodes' CPs.
            used = self.needs_nodes and top is not None
            package_checks.check(
                self.report, self.package_dir, self.flavour,
                user_data=top['user_data_ref'] if used else None,
                params=params if used else None, ext_cps=ext_cps)
            if used and params is not None:
                pv_manifests.check(self.report, self.package_dir, params)
        return params

    def _params(self, top, default_version):
        if 'registry' in top:
            return self._registry(top, default_version)
        raw = top.get('root')
        if raw is None:
            return model.ClusterParams(
                kubernetes_version=default_version, flavour=self.flavour,
                operation=self.operation,
                **_options(top))
        if not isinstance(raw, dict):
            self.report.problem(ROOT, 'expected an object, got %s'
                                % fields.describe(raw))
            return None
        return self._cluster(raw, top, default_version)

    # -- additionalParams itself ------------------------------------------

    def _top_level(self, params):
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.report.problem('additionalParams', 'expected an object, got '
                                '%s' % fields.describe(params))
            return None
        options = [name for name, ops in OPERATION_OPTIONS.items()
                   if self.operation in ops]
        ignored = TACKER_KEYS | {tacker_settings.heal_block_storage().key}
        self.warn_unknown('', params, [ROOT, registry_vnf.ROOT] + options,
                          ignored=ignored)
        top = {'user_data': request_body.USER_DATA in params,
               'user_data_ref': request_body.user_data(
                   self.report, params, self.operation)}
        for name in options:
            found, value = self.lookup('', params, name)
            if found and fields.boolean(self.report, name,
                                        value) is not None:
                top[name] = value
        if self.operation == 'heal':
            self._block_storage_key(params)
        found, value = self.lookup('', params, ROOT)
        registry_found, registry = self.lookup('', params, registry_vnf.ROOT)
        if registry_found:
            if found:
                self.report.problem(registry_vnf.ROOT, 'give %s (a cluster) '
                                    'or %s (a registry VM), not both'
                                    % (ROOT, registry_vnf.ROOT))
                return None
            top['registry'] = registry
        elif self.flavour == model.REGISTRY_FLAVOUR and (
                found or self.operation != 'terminate'):
            self.report.problem(registry_vnf.ROOT, 'required: flavour %s '
                                'builds a registry VM, and its request '
                                'carries %s' % (model.REGISTRY_FLAVOUR,
                                                registry_vnf.ROOT))
            return None
        elif found:
            top['root'] = value
        elif self.operation == 'terminate':
            self.report.warn(ROOT, 'absent: no cluster parameters, nothing '
                                   'cluster-specific to clean up')
        else:
            given = ', '.join(sorted(key_for_path(k)
                                     for k in params)[:10]) or 'none'
            self.report.problem(ROOT, 'required for %s: additionalParams '
                                'holds no Kubernetes cluster parameters '
                                '(keys given: %s)' % (self.operation, given))
        return top

    def _block_storage_key(self, params):
        """Tacker recreates a healed VNFC's volumes for any truthy value of
        its key, the string "false" too: only a boolean is accepted."""
        key = tacker_settings.heal_block_storage().key
        if key in params and not isinstance(params[key], bool):
            self.report.problem(key, 'expected true or false, got %s: '
                                'Tacker takes any non-empty value, even '
                                '"false", as true and recreates the '
                                'volumes' % fields.describe(params[key]))

    # -- private_registry_installation_param ---------------------------------

    def _registry(self, top, default_version):
        flavour = self.flavour
        if flavour in model.KNOWN_FLAVOURS and \
                flavour != model.REGISTRY_FLAVOUR:
            self.report.problem(registry_vnf.ROOT, 'flavour %s builds a '
                                'Kubernetes cluster, not a registry: its '
                                'request carries %s' % (flavour, ROOT))
            return None
        if self.operation == 'scale':
            self.report.problem(registry_vnf.ROOT, 'the registry VNF has one '
                                'VM and does not scale')
            return None
        registry = registry_vnf.check(self, top['registry'],
                                      self.package_dir, self.needs_nodes)
        if registry is None:
            return None
        return model.ClusterParams(
            kubernetes_version=default_version,
            private_registry_installation_param=registry,
            flavour=flavour, operation=self.operation, **_options(top))

    # -- k8s_cluster_installation_param ------------------------------------

    def _cluster(self, raw, top, default_version):
        package_path = functools.partial(fields.package_path,
                                         package_dir=self.package_dir)
        spec = {'vim_name': fields.vim_name,
                'kubernetes_version': fields.kubernetes_version}
        known = ('script_path', 'master_node', 'worker_node', 'proxy',
                 'storage_server', 'pv_registration_params', 'ansible',
                 'external_lb_param', 'kubernetes_apt_repository',
                 'private_registry_connection_info', 'helm',
                 'helm_installation_script_path', 'cni')
        root = self.section(ROOT, raw, spec, extra_known=known)
        found = {name: self.lookup(ROOT, raw, name) for name in known}
        ansible = (self._ansible(found['ansible'][1])
                   if found['ansible'][0] else None)
        script_path = self._script_path(found['script_path'], ansible,
                                        package_path)
        master = self._master(found['master_node'], top['user_data'])
        worker = self._worker(found['worker_node'], top['user_data'])
        proxy = (self._proxy(found['proxy'][1])
                 if found['proxy'][0] else None)
        storage = (self._storage(found['storage_server'][1])
                   if found['storage_server'][0] else None)
        volumes = (self._pv_registrations(found['pv_registration_params'][1],
                                          package_path)
                   if found['pv_registration_params'][0] else ())
        lb = (self._external_lb(found['external_lb_param'][1], package_path)
              if found['external_lb_param'][0] else None)
        repository = (self._repository(
            found['kubernetes_apt_repository'][1], package_path)
            if found['kubernetes_apt_repository'][0] else None)
        registries = (addons.registries(
            self, found['private_registry_connection_info'][1], package_path)
            if found['private_registry_connection_info'][0] else ())
        helm, helm_script = addons.helm(
            self, found['helm'], found['helm_installation_script_path'],
            package_path)
        cni = (cni_params.check(self, found['cni'][1], package_path,
                                (master and master.pod_cidr) or
                                model.DEFAULT_POD_CIDR)
               if found['cni'][0] else None)
        params = model.ClusterParams(
            kubernetes_version=root.get('kubernetes_version', default_version),
            script_path=script_path, vim_name=root.get('vim_name'),
            master_node=master, worker_node=worker, proxy=proxy,
            storage_server=storage, pv_registration_params=volumes,
            ansible=ansible, external_lb_param=lb,
            kubernetes_apt_repository=repository,
            private_registry_connection_info=registries, helm=helm,
            helm_installation_script_path=helm_script, cni=cni,
            flavour=self.flavour,
            operation=self.operation, **_options(top))
        self._cross_checks(params)
        return params

    def _script_path(self, found_value, ansible, package_path):
        found, value = found_value
        path = child(ROOT, 'script_path')
        if ansible is not None:
            if found and value == '':
                self.report.warn(path, 'empty; ignored: the kubespray mode '
                                       'does not run the install script')
                return None
            return package_path(self.report, path, value) if found else None
        if not found:
            if self.needs_nodes:
                self.report.problem(path, 'required for %s' % self.operation)
            return None
        return package_path(self.report, path, value)

    def _master(self, found_value, user_data):
        path = child(ROOT, 'master_node')
        section = self._group(found_value, path, _MASTER_SPEC)
        if section is None:
            return None
        if self.needs_nodes:
            self.require(section, _CONNECT_FIELDS + ('cluster_cp_name',),
                         ' for %s' % self.operation)
            if self.flavour in model.HA_FLAVOURS:
                self.require(section, ('aspect_id',), ' for the HA flavour '
                             '%r (the group of 3+ masters)' % self.flavour)
            elif user_data:
                self.require(section, ('aspect_id',), ' when '
                             'lcm-operation-user-data is used')
        self.credentials(section, needed=self.needs_nodes)
        return model.MasterNodeParams(**section.values)

    def _worker(self, found_value, user_data):
        path = child(ROOT, 'worker_node')
        section = self._group(found_value, path, _NODE_SPEC)
        if section is None:
            return None
        if self.needs_nodes:
            self.require(section, _CONNECT_FIELDS, ' for %s' % self.operation)
            if self.operation == 'scale':
                self.require(section, ('aspect_id',), ' for scale')
            elif user_data:
                self.require(section, ('aspect_id',), ' when '
                             'lcm-operation-user-data is used')
        self.credentials(section, needed=self.needs_nodes)
        return model.WorkerNodeParams(**section.values)

    def _group(self, found_value, path, spec):
        found, value = found_value
        if not found:
            if self.needs_nodes:
                self.report.problem(path, 'required for %s' % self.operation)
            return None
        return self.section(path, value, spec)

    def _proxy(self, raw):
        section = self.section(child(ROOT, 'proxy'), raw, _PROXY_SPEC)
        return model.ProxyParams(**section.values) if section else None

    def _repository(self, raw, package_path):
        """The Kubernetes apt repository: ``url`` required, its key by
        ``key_url`` or ``key_path`` (a file of the package), not both."""
        path = child(ROOT, 'kubernetes_apt_repository')
        spec = {'url': fields.repository_url,
                'key_url': fields.repository_url, 'key_path': package_path}
        section = self.section(path, raw, spec)
        if section is None or not self.require(section, ('url',)):
            return None
        if {'key_url', 'key_path'} <= section.present:
            self.report.problem(child(path, 'key_path'), 'give the signing '
                                'key by key_url or by key_path, not both')
            return None
        if set(section.values) != section.present:
            return None
        values = dict(section.values)
        if not values['url'].endswith('/'):
            values['url'] += '/'
        return model.KubernetesAptRepository(**values)

    def _storage(self, raw):
        path = child(ROOT, 'storage_server')
        section = self.section(path, raw, _STORAGE_SPEC,
                               extra_known=_STORAGE_LISTS)
        if section is None:
            return None
        self.require(section, ('ssh_cp_name', 'username'))
        self.credentials(section)
        exports = dict(_EXPORT_SPEC, export_to=functools.partial(
            nfs_exports.export_to,
            allow_wide=section.get('allow_wide_export', False)))
        lists = {}
        for name, spec, cls in (
                ('cinder_volume_setup_params', _VOLUME_SPEC,
                 model.CinderVolumeSetup),
                ('nfs_server_setup_params', exports, model.NfsExport)):
            found, value = self.lookup(path, raw, name)
            if not found:
                self.report.problem(child(path, name), 'required')
                continue
            items = self.section_list(child(path, name), value, spec, 1)
            lists[name] = tuple(self.complete(item, spec, cls,
                                              ('no_root_squash',))
                                for item in items)
        return model.StorageServerParams(
            **section.values,
            **{name: tuple(i for i in items if i) for name, items in
               lists.items()})

    def _pv_registrations(self, raw, package_path):
        spec = {'pv_manifest_file_path': package_path,
                'nfs_server_cp': fields.name}
        items = self.section_list(child(ROOT, 'pv_registration_params'),
                                  raw, spec)
        built = (self.complete(item, spec, model.PvRegistration)
                 for item in items)
        return tuple(item for item in built if item)

    def complete(self, section, spec, cls, optional=()):
        """Build ``cls`` from a list item whose fields are all required
        but ``optional``, and all valid."""
        required = tuple(name for name in spec if name not in optional)
        if self.require(section, required) and set(
                section.values) == section.present:
            return cls(**section.values)
        return None

    def _ansible(self, raw):
        path = child(ROOT, 'ansible')
        placeholders = []

        def maybe_placeholder(check):
            def checked(report, where, value):
                if value == '':
                    placeholders.append(where)
                    return ''
                result = check(report, where, value)
                if result == '0.0.0.0':
                    placeholders.append(where)
                return result
            return checked

        address = maybe_placeholder(ansible_checks.server_address)
        spec = {'ip_address': address,
                'username': fields.username, 'password': fields.secret,
                'ssh_private_key': fields.private_key,
                'kubespray_root_path': maybe_placeholder(fields.vm_path),
                'transferring_inventory_path':
                    maybe_placeholder(ansible_checks.inventory_path),
                'host_key_fingerprint': ansible_checks.host_key_fingerprint}
        section = self.section(path, raw, spec)
        if section is None:
            return None
        self.require(section, ('ip_address', 'username', 'kubespray_root_path',
                               'transferring_inventory_path'))
        self.credentials(section)
        for where in placeholders:
            self.report.warn(where, 'placeholder (empty or 0.0.0.0): the '
                                    'kubespray mode cannot run until it is '
                                    'set')
        return model.AnsibleParams(placeholders=tuple(placeholders),
                                   **section.values)

    def _external_lb(self, raw, package_path):
        spec = {'ssh_cp_name': fields.name, 'ssh_username': fields.username,
                'ssh_password': fields.secret,
                'ssh_private_key': fields.private_key,
                'script_path': package_path}
        section = self.section(child(ROOT, 'external_lb_param'), raw, spec)
        if section is None:
            return None
        self.require(section, ('ssh_cp_name', 'ssh_username', 'script_path'))
        self.credentials(section, password_field='ssh_password')
        return model.ExternalLbParams(**section.values)

    # -- rules across fields -----------------------------------------------

    def _cross_checks(self, params):
        overlap.check_networks(self.report, params)
        overlap.check_storage(self.report, params)
        ansible_checks.mode_checks(self, params)
        if self.flavour is not None and self.flavour not in (
                model.KNOWN_FLAVOURS):
            shown = (fields.show(self.flavour) if isinstance(
                self.flavour, str) else fields.describe(self.flavour))
            self.report.warn('flavourId', 'unknown flavour %s: treated as a '
                             'single-master cluster' % shown)


def log_warnings(warnings):
    for path, message in warnings:
        LOG.warning('Parameter %(path)s: %(message)s',
                    {'path': path, 'message': message})
