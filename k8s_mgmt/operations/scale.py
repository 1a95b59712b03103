"""Scale: workers out (join) and in (cordon, drain, delete)."""

from k8s_mgmt import exceptions


def scale_in(ctx):
    """scale_start for SCALE_IN: drain and delete the workers Heat removes."""
    raise exceptions.NotImplementedOperation(
        operation='scale_start for SCALE_IN (draining and removing workers)')


def rollback_scale_out(ctx):
    """scale_start with a SCALE_OUT request: undo a failed scale-out."""
    raise exceptions.NotImplementedOperation(
        operation='scale_start for a SCALE_OUT rollback (removing the '
                  'workers that joined)')


def scale_out(ctx):
    """scale_end for SCALE_OUT: join the new workers."""
    raise exceptions.NotImplementedOperation(
        operation='scale_end for SCALE_OUT (joining new workers)')
