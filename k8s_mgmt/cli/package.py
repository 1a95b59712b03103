"""``k8s-mgmt package build|request``: the sample VNF package and its
requests, from whatever installation runs the command."""

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
                                  vnfd_id=args.vnfd_id)
    except (package_mod.PackageError, OSError) as err:
        raise UserError('package build failed: %s' % err)
    driver = package_mod.sha256_hex(files[package_mod.DRIVER_ARTIFACT])
    for where in (output, args.output_dir):
        if where:
            print('%s: %d files, %s sha256 %s'
                  % (where, len(files), package_mod.DRIVER_ARTIFACT, driver))
    return 0


def filled_request(flavour, vim_id=None, network=None):
    """The sample request of ``flavour`` with the operator's VIM and
    network in place of the placeholders."""
    body = shipped.sample_request(flavour)
    if vim_id:
        for entry in body.get('vimConnectionInfo', []):
            entry['vimId'] = vim_id
    if network:
        for link in body.get('extVirtualLinks', []):
            link['resourceId'] = network
    return body


def cmd_request(args):
    for option, value in (('--vim-id', args.vim_id),
                          ('--network', args.network)):
        if value is not None and (not value.strip() or
                                  not value.isprintable()):
            raise UserError('%s: must be a non-empty id' % option)
    text = json.dumps(filled_request(args.flavour, args.vim_id,
                                     args.network), indent=2) + '\n'
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
