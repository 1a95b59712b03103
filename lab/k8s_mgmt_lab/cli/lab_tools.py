"""``k8s-mgmt lab fault`` and ``k8s-mgmt lab exec``: reach into one lab VM.

``fault VM STEP [--clear]`` makes a stand-in step fail on that VM the way
the real tool fails (lab/k8s_mgmt_lab/kube/faults.py); the fault is a file
in the VM's own root, so it lasts until cleared or the VM is deleted;
``fault --new-vms STEP`` sets it on every VM booted from then on
(:mod:`k8s_mgmt_lab.machines.vm_faults`).
``exec VM -- COMMAND...`` runs a command inside the VM as root, with this
terminal's stdin, stdout and stderr and the command's exit status.

VM is the name ``lab status`` shows or the server id. Each verb imports
the lab's modules it needs when it runs (``exec`` reads the lab's VM
registry, and its Heat only for a name the registry does not hold).
"""

import argparse
import subprocess

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.kube import faults


def register(verbs):
    """Add ``fault`` and ``exec`` to the ``k8s-mgmt lab`` parser."""
    steps = ', '.join('%s (%s)' % item for item in faults.STEPS.items())
    fault = verbs.add_parser(
        'fault', help='make a stand-in step fail on one lab VM',
        description='Make a stand-in step fail on one lab VM the way the '
                    'real tool fails, until cleared. Steps: %s.' % steps)
    fault.add_argument('vm', metavar='VM', nargs='?',
                       help='the VM\'s name (as "lab status" shows) or '
                            'server id')
    fault.add_argument('step', metavar='STEP', choices=sorted(faults.STEPS),
                       help='one of: %s' % ', '.join(sorted(faults.STEPS)))
    fault.add_argument('--clear', action='store_true',
                       help='remove the fault instead of setting it')
    fault.add_argument('--new-vms', action='store_true',
                       help='instead of one VM: every VM the lab\'s Nova '
                            'boots from now on (a scale-out\'s, a heal\'s)')
    fault.set_defaults(func=cmd_fault)
    run = verbs.add_parser(
        'exec', help='run a command inside a lab VM as root',
        description='Run COMMAND inside the lab VM as root (its mounts, '
                    'hostname, processes and network), with this stdin, '
                    'stdout and stderr; exits with the command\'s status.')
    run.add_argument('vm', metavar='VM',
                     help='the VM\'s name (as "lab status" shows) or server '
                          'id')
    run.add_argument('argv', metavar='-- COMMAND', nargs=argparse.REMAINDER,
                     help='the command and its arguments')
    run.set_defaults(func=cmd_exec)


def node_names(state_dir):
    """{node name as ``lab status`` shows it: server id}, read from the
    lab's Heat stack."""
    from k8s_mgmt_lab.conductor import status as status_mod
    record = settings_mod.read_record(
        settings_mod.LabSettings(state_dir=state_dir))
    if record is None:
        raise UserError('no lab is up in %s; run "k8s-mgmt lab up"'
                        % state_dir)
    try:
        topology = status_mod.read_topology(record)
    except Exception as err:  # the lab daemon (Heat API) is gone or broken
        raise UserError('cannot read the lab\'s stack: %s: %s'
                        % (type(err).__name__, err))
    return {n.name: n.server_id for n in topology.all_nodes()}


def find_vm(state_dir, name):
    """(server id, registry record) of a running VM by the name ``lab
    status`` shows, its server id or its hostname."""
    from k8s_mgmt_lab.machines import registry as registry_mod
    vms = registry_mod.Registry(state_dir).read()['vms']
    found = [(vm_id, rec) for vm_id, rec in vms.items()
             if name in (vm_id, rec.get('hostname'))]
    if not found:
        names = node_names(state_dir)
        found = [(names[name], vms[names[name]])] \
            if names.get(name) in vms else []
        if not found:
            raise UserError('no lab VM %r in %s (VMs: %s)' % (
                name, state_dir, ', '.join(sorted(names)) or 'none'))
    vm_id, record = found[0]
    if record.get('status') != 'running' or not record.get('init_pid'):
        raise UserError('lab VM %s is not running (%s)'
                        % (name, record.get('status')))
    return vm_id, record


def set_fault(state_dir, name, step, clear=False):
    """Set (or clear) ``step``'s fault on the VM; True when it changed."""
    from k8s_mgmt_lab.machines import vm_faults
    if step not in faults.STEPS:
        raise UserError('unknown step %r (steps: %s)'
                        % (step, ', '.join(sorted(faults.STEPS))))
    _vm_id, record = find_vm(state_dir, name)
    return vm_faults.set_in_vm(record['init_pid'], step, clear)


def cmd_fault(args):
    from k8s_mgmt_lab.machines import vm_faults
    if args.new_vms == bool(args.vm):
        raise UserError('lab fault needs a VM or --new-vms (not both)')
    if args.new_vms:
        changed = vm_faults.set_for_new_vms(args.state_dir, args.step,
                                            args.clear)
        where = 'every VM booted from now on'
    else:
        changed = set_fault(args.state_dir, args.vm, args.step, args.clear)
        where = args.vm
    state = 'cleared' if args.clear else 'set'
    print('fault %s on %s %s%s' % (args.step, where, state,
                                   '' if changed else ' (already)'))
    return 0


def exec_in_vm(state_dir, name, argv, **popen_kwargs):
    """Run ``argv`` as root inside the VM; the CompletedProcess."""
    from k8s_mgmt_lab.machines import vm as vm_mod
    if argv[:1] == ['--']:
        argv = argv[1:]
    if not argv:
        raise UserError('lab exec needs a command: lab exec VM -- COMMAND')
    _vm_id, record = find_vm(state_dir, name)
    return subprocess.run(vm_mod.nsenter_argv(record['init_pid'], argv),
                          env=vm_mod.VM_ENV, check=False, **popen_kwargs)


def cmd_exec(args):
    return exec_in_vm(args.state_dir, args.vm, list(args.argv)).returncode
