"""``k8s-mgmt lab heal`` and ``k8s-mgmt lab kill``.

Each verb imports the lab's modules it needs when it runs.
"""

from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting
from k8s_mgmt_lab.errors import LabError


def register(verbs):
    """``lab heal`` and ``lab kill`` on the ``k8s-mgmt lab`` parser."""
    heal_p = verbs.add_parser(
        'heal', help='heal one VNFC (--vnfc) or the whole VNF',
        description='Through Tacker\'s API on a lab that runs Tacker. On a '
                    'shared control plane: call the driver\'s heal_start, '
                    'let the lab\'s Heat replace the server (or recreate the '
                    'stack without --vnfc), then heal_end, as Tacker\'s '
                    'conductor does.')
    heal_p.add_argument('--vnfc', metavar='VNFC_ID',
                        help='VNFC id from "lab status --json"; without it '
                             'the whole VNF is healed')
    heal_p.add_argument('--keep-volumes', action='store_true',
                        help='keep the VNFC\'s Cinder volumes and their '
                             'data (the request\'s additionalParams carry '
                             'tacker_extension_heal_include_block_storage: '
                             'false); by default Heat gives the new server '
                             'new, empty volumes, as Tacker does')
    heal_p.add_argument('--recreate-volumes', action='store_true',
                        help='accept that the storage server gets a new, '
                             'empty volume (storage_volume_recreate: true); '
                             'without it or --keep-volumes the driver '
                             'refuses to heal the storage server')
    heal_p.add_argument('--quiet', action='store_true',
                        help='no progress lines from the driver on stderr')
    heal_p.add_argument('--json', action='store_true')
    heal_p.set_defaults(func=cmd_heal)
    kill_p = verbs.add_parser(
        'kill', help='crash the VM of a VNFC (Heat still lists it)')
    kill_p.add_argument('--vnfc', metavar='VNFC_ID', required=True)
    kill_p.set_defaults(func=cmd_kill)


def cmd_heal(args):
    if args.keep_volumes and args.recreate_volumes:
        raise LabError('--keep-volumes and --recreate-volumes exclude each '
                       'other')
    if args.keep_volumes and not args.vnfc:
        raise LabError('--keep-volumes needs --vnfc: a whole-VNF heal '
                       'builds a new stack with new volumes')
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        params = operations.heal_params(args.keep_volumes,
                                        args.recreate_volumes)
        return lab_tacker.run('heal', args.state_dir, lambda s: (
            operations.heal(s, [args.vnfc] if args.vnfc else (), params)),
            as_json=args.json, quiet=args.quiet)
    from k8s_mgmt_lab.conductor import lcm_heal
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet)
    with reporting.reported('heal', settings):
        result = lcm_heal.heal(settings, args.vnfc,
                               keep_volumes=args.keep_volumes,
                               recreate_volumes=args.recreate_volumes)
    what = ('VNFC %s: server %s replaced by %s' % (
        result.vnfc_id, result.old, result.new) if result.vnfc_id else
        'whole VNF: stack %s recreated as %s' % (result.old, result.new))
    print('healed VNF instance %s, %s' % (result.vnf_instance_id, what))
    print('heal_start %.2f s, cloud %.2f s, heal_end %.2f s'
          % (result.seconds_start, result.seconds_cloud, result.seconds_end))
    return 0


def cmd_kill(args):
    from k8s_mgmt_lab.conductor import lcm_heal
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    with reporting.reported('kill', settings):
        server_id, killed = lcm_heal.kill(settings, args.vnfc)
    print('VM of VNFC %s (server %s) %s' % (
        args.vnfc, server_id, 'killed' if killed else 'was already dead'))
    return 0
