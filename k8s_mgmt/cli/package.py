"""``k8s-mgmt package build``: the sample VNF package as a CSAR zip."""

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt import package as package_mod

DEFAULT_OUTPUT = 'k8s_mgmt_vnf_package.zip'


def register(subparsers):
    parser = subparsers.add_parser(
        'package', help='build the VNF package (CSAR)')
    verbs = parser.add_subparsers(dest='package_command', metavar='VERB')
    build = verbs.add_parser(
        'build', help='assemble the CSAR with the installed driver',
        description='Assemble the VNF package from its source tree, with the '
                    'installed driver module as %s, the install and load '
                    'balancer scripts under Scripts/, and every file\'s '
                    'SHA-256 in %s. The same inputs always give the same '
                    'zip.' % (package_mod.DRIVER_ARTIFACT,
                              package_mod.TOSCA_META))
    build.add_argument('--output', metavar='FILE.zip',
                       help='CSAR zip to write (default: %s, unless only '
                            '--output-dir is given)' % DEFAULT_OUTPUT)
    build.add_argument('--output-dir', metavar='DIR',
                       help='also (or only) write the package unpacked into '
                            'DIR, e.g. for "k8s-mgmt validate --package-dir"')
    build.add_argument('--source', metavar='DIR',
                       default=package_mod.default_source_dir(),
                       help='package source tree (default: %(default)s)')
    build.set_defaults(func=cmd_build)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def cmd_build(args):
    output = args.output
    if not output and not args.output_dir:
        output = DEFAULT_OUTPUT
    try:
        files = package_mod.build(output=output, output_dir=args.output_dir,
                                  source_dir=args.source)
    except (package_mod.PackageError, OSError) as err:
        raise UserError('package build failed: %s' % err)
    driver = package_mod.sha256_hex(files[package_mod.DRIVER_ARTIFACT])
    for where in (output, args.output_dir):
        if where:
            print('%s: %d files, %s sha256 %s'
                  % (where, len(files), package_mod.DRIVER_ARTIFACT, driver))
    return 0
