"""``k8s-mgmt package build|request``: the sample VNF package and its
requests, from whatever installation runs the command."""

import copy
import json
import sys

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt import shipped

DEFAULT_OUTPUT = 'k8s_mgmt_vnf_package.zip'
# k8s_mgmt.package's names, for the help: the parser cannot import that
# module without loading oslo.log and oslo.config at every start-up;
# tests/unit/test_cli_importtime.py checks they agree.
DRIVER_ARTIFACT = 'Scripts/k8s_mgmt_driver.py'
TOSCA_META = 'TOSCA-Metadata/TOSCA.meta'
# k8s_mgmt.package.APIS and k8s_mgmt.package_v2.V2_SCRIPT, checked there too.
APIS = ('v1', 'v2')
V2_SCRIPT = 'Scripts/k8s_mgmt_v2.py'
# What a v2 InstantiateVnfRequest names: the key of its one
# vimConnectionInfo entry and the VIM type Tacker's v2 API expects.
V2_VIM_KEY = 'vim1'
V2_VIM_TYPE = 'ETSINFV.OPENSTACK_KEYSTONE.V_3'
# The v1 UserData keys; v2 builds the stack with its DefaultUserData.
USER_DATA_KEYS = ('lcm-operation-user-data', 'lcm-operation-user-data-class')


def register(subparsers):
    parser = subparsers.add_parser(
        'package', help='build the VNF package (CSAR) and its sample requests')
    verbs = parser.add_subparsers(dest='package_command', metavar='VERB')
    build = verbs.add_parser(
        'build', help='assemble the CSAR with the installed driver',
        description='Assemble the VNF package from its source tree, with the '
                    'installed driver module as %s, the install and load '
                    'balancer scripts under Scripts/, and every file\'s '
                    'SHA-256 in %s. The same inputs always give the same '
                    'zip.' % (DRIVER_ARTIFACT, TOSCA_META))
    build.add_argument('--output', metavar='FILE.zip',
                       help='CSAR zip to write (default: %s, unless only '
                            '--output-dir is given)' % DEFAULT_OUTPUT)
    build.add_argument('--output-dir', metavar='DIR',
                       help='also (or only) write the package unpacked into '
                            'DIR, e.g. for "k8s-mgmt validate --package-dir"')
    build.add_argument('--source', metavar='DIR',
                       help='package source tree (default: the sample '
                            'package shipped with k8s-mgmt)')
    build.add_argument('--vnfd-id', metavar='UUID',
                       help='descriptor_id of the VNFD instead of the '
                            'sample\'s: Tacker 16 never onboards a VNFD id '
                            'twice, even after the package is deleted, so a '
                            'rebuilt package needs a new one')
    build.add_argument('--api', choices=APIS, default='v1',
                       help='Tacker VNF LCM API the package is for (default: '
                            'v1). v2 ships the k8s-mgmt v2 script as %s '
                            'instead of the driver, points every VNFD hook '
                            'at it (its path relative to Definitions/), '
                            'makes the top BaseHOT templates ask for the '
                            'computeFlavourId and vcImageId that v2\'s '
                            'DefaultUserData fills, and leaves out UserData/'
                            % V2_SCRIPT)
    build.add_argument('--kubernetes-version', metavar='VERSION',
                       help='the Kubernetes version the package names '
                            '(1.36, or 1.36.1), in Files/k8s-mgmt/'
                            'kubernetes_version: the default of an '
                            'instantiate, and what a change of an '
                            'instance\'s package to this one upgrades to '
                            '(v2 change_vnfpkg)')
    build.set_defaults(func=cmd_build)
    request = verbs.add_parser(
        'request', help='print a sample InstantiateVnfRequest body',
        description='Print the sample InstantiateVnfRequest body of a '
                    'flavour of the sample package, ready for "openstack '
                    'vnflcm instantiate": --vim-id and --network put your '
                    'OpenStack VIM and Neutron network in place of the '
                    'sample\'s placeholders.')
    request.add_argument('flavour', choices=shipped.sample_flavours())
    request.add_argument('--vim-id', metavar='UUID',
                         help='vimId of every vimConnectionInfo entry (the '
                              'id "openstack vim list" shows)')
    request.add_argument('--network', metavar='NETWORK_ID',
                         help='resourceId of every extVirtualLinks entry '
                              '(the Neutron network the nodes attach to)')
    request.add_argument('--api', choices=APIS, default='v1',
                         help='Tacker VNF LCM API of the request (default: '
                              'v1). v2: vimConnectionInfo is an object with '
                              'one entry "%s", each extCps[].cpConfig an '
                              'object, and no lcm-operation-user-data keys '
                              '(v2 uses its DefaultUserData)' % V2_VIM_KEY)
    request.add_argument('--addons', action='store_true',
                         help='print the flavour\'s add-on variant (%s): '
                              'the sample plus Helm, a private registry '
                              'connection or a CNI preset with Multus; the '
                              'files it names under Files/ must be added to '
                              'the VNF package (see the Add-ons page of the '
                              'documentation)'
                              % ', '.join(shipped.addon_flavours()))
    request.add_argument('--output', metavar='FILE',
                         help='write to FILE instead of standard output')
    request.set_defaults(func=cmd_request)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def cmd_build(args):
    from k8s_mgmt import package as package_mod
    output = args.output
    if not output and not args.output_dir:
        output = DEFAULT_OUTPUT
    try:
        files = package_mod.build(output=output, output_dir=args.output_dir,
                                  source_dir=args.source,
                                  vnfd_id=args.vnfd_id, api=args.api,
                                  kubernetes_version=args.kubernetes_version)
    except (package_mod.PackageError, OSError) as err:
        raise UserError('package build failed: %s' % err)
    script = V2_SCRIPT if args.api == 'v2' else DRIVER_ARTIFACT
    digest = package_mod.sha256_hex(files[script])
    for where in (output, args.output_dir):
        if where:
            print('%s: %d files, %s sha256 %s'
                  % (where, len(files), script, digest))
    return 0


def filled_request(flavour, vim_id=None, network=None, api='v1',
                   addons=False):
    """The sample request of ``flavour`` (its add-on variant with
    ``addons``) with the operator's VIM and network in place of the
    placeholders; ``api`` 'v2' reshapes it for Tacker's v2 API
    (:func:`v2_request`)."""
    if api not in APIS:
        raise ValueError('api must be one of %s, not %r'
                         % (', '.join(APIS), api))
    body = shipped.sample_request(flavour, addons=addons)
    if vim_id:
        for entry in body.get('vimConnectionInfo', []):
            entry['vimId'] = vim_id
    if network:
        for link in body.get('extVirtualLinks', []):
            link['resourceId'] = network
    return v2_request(body) if api == 'v2' else body


def v2_request(body):
    """A v1 InstantiateVnfRequest body as Tacker's v2 API takes it.

    * ``vimConnectionInfo``: v2 keys its entries by name and picks its VIM
      only when there is exactly one, so the first v1 entry becomes the
      only one; given just ``vimId``, Tacker fills the access info from
      its VIM database.
    * ``extCps[].cpConfig``: a map in v2, each v1 item keyed
      ``<cpdId>_<n>``.
    * ``additionalParams``: without the UserData keys, so v2 uses its
      DefaultUserData (the v2 package has no UserData/).
    """
    result = {}
    for key, value in body.items():
        if key == 'vimConnectionInfo':
            value = _v2_vim_connections(value)
        elif key == 'extVirtualLinks':
            value = [_v2_link(link) for link in value]
        elif key == 'additionalParams':
            value = {name: item for name, item in value.items()
                     if name not in USER_DATA_KEYS}
        result[key] = value
    return result


def _v2_vim_connections(entries):
    if isinstance(entries, dict):
        return entries      # v2's shape already: kept as the operator wrote
    first = entries[0] if entries else {}
    return {V2_VIM_KEY: {'vimId': first.get('vimId'),
                         'vimType': V2_VIM_TYPE}}


def _v2_link(link):
    link = dict(link)
    link['extCps'] = [_v2_ext_cp(cp) for cp in link.get('extCps', [])]
    return link


def _v2_ext_cp(cp):
    cp = dict(cp)
    config = cp.get('cpConfig')
    if isinstance(config, list):
        cp['cpConfig'] = {'%s_%d' % (cp.get('cpdId'), index):
                          _v2_cp_config(item)
                          for index, item in enumerate(config, 1)}
    return cp


# What v2 needs of an IP_OVER_ETHERNET port that v1 leaves to Neutron:
# one address, any, from the network's subnet.
DYNAMIC_IPV4 = {'ipAddresses': [{'type': 'IPV4', 'numDynamicAddresses': 1}]}


def _v2_cp_config(config):
    """v2 reads ``ipOverEthernet`` of every IP_OVER_ETHERNET protocol
    entry: an entry without one asks for one dynamic IPv4 address."""
    if not isinstance(config, dict):
        return config
    config = dict(config)
    data = config.get('cpProtocolData')
    if isinstance(data, list):
        config['cpProtocolData'] = [
            dict(item, ipOverEthernet=copy.deepcopy(DYNAMIC_IPV4))
            if isinstance(item, dict) and
            item.get('layerProtocol') == 'IP_OVER_ETHERNET' and
            'ipOverEthernet' not in item else item
            for item in data]
    return config


def cmd_request(args):
    for option, value in (('--vim-id', args.vim_id),
                          ('--network', args.network)):
        if value is not None and (not value.strip() or
                                  not value.isprintable()):
            raise UserError('%s: must be a non-empty id' % option)
    if args.addons and args.flavour not in shipped.addon_flavours():
        raise UserError('--addons: flavour %s has no add-on variant; these '
                        'have one: %s' % (args.flavour, ', '.join(
                            shipped.addon_flavours())))
    text = json.dumps(filled_request(args.flavour, args.vim_id,
                                     args.network, api=args.api,
                                     addons=args.addons),
                      indent=2) + '\n'
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, 'w') as handle:
            handle.write(text)
    except OSError as err:
        raise UserError('cannot write %s: %s'
                        % (args.output, err.strerror or err))
    return 0
