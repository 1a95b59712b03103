"""The ``operationParams`` Tacker 16's v1 API cannot show, rewritten as the
JSON they were.

Tacker 16.0.0 records the request of a v1 ``PATCH
/vnflcm/v1/vnf_instances/{id}`` (operation ``MODIFY_INFO``) as
``str(body)``, a Python literal (``tacker/api/vnflcm/v1/controller.py``,
``VnfLcmController.update``: ``'operationParams': str(body)``), where every
other operation records ``jsonutils.dumps(body)``. Its own view of an
occurrence then parses that text as JSON
(``tacker/api/views/vnf_lcm.py``, ``ViewBuilder._get_vnf_lcm_op_occs``:
``json.loads(vnf_lcm_op_occs_dict['operationParams'])``), so ``GET
/vnflcm/v1/vnf_lcm_op_occs/{id}`` answers 500 (``JSONDecodeError``) for
every MODIFY_INFO occurrence, and so does ``retry`` of a failed one before
it reaches its own checks: an operator who upgrades Kubernetes or renews
certificates by a PATCH cannot follow the operation with ``openstack
vnflcm op show``.

The conductor calls the driver's modify hooks with the occurrence already
in Tacker's database, so :func:`repair` rewrites, in the conductor's own
database session, the ``operationParams`` of the instance's MODIFY_INFO
occurrences that are a Python literal of a dict as the JSON of the same
dict. Text that is JSON already (a Tacker that records JSON) or that is no
literal of a dict is left alone, and a failure to repair is logged, never
raised: the workaround never fails an operation.
"""

import ast
import json

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

OPERATION = 'MODIFY_INFO'
# Where the defect lives, for the log and the docs (doc/source/tacker.rst).
UPSTREAM = ('tacker/api/vnflcm/v1/controller.py VnfLcmController.update '
            'records operationParams as str(body)')


def as_json(text):
    """The JSON text of what Tacker 16 recorded as a Python literal of a
    dict; None when ``text`` needs no rewrite (JSON already, empty, not a
    string) or is no literal of a dict."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        json.loads(text)
    except ValueError:
        pass
    else:
        return None
    try:
        # literal_eval builds only literals: no name is looked up, no call
        # is made.
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError,
            RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return None


def _tacker_database():
    """(Tacker's enginefacade, its op-occurrence model, its Context class),
    or None outside a Tacker conductor (no Tacker, or no database in its
    configuration)."""
    try:
        from oslo_config import cfg
        from tacker import context as tacker_context
        from tacker.db import api as db_api
        from tacker.db.db_sqlalchemy import models
    except ImportError:
        return None
    try:
        if not cfg.CONF.database.connection:
            return None
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return None
    return db_api.context_manager, models.VnfLcmOpOccs, tacker_context.Context


def rewrite(session, model, vnf_instance_id):
    """Rewrite in ``session`` the MODIFY_INFO occurrences of the instance
    whose ``operationParams`` :func:`as_json` rewrites; their ids."""
    rows = session.query(model.id, model.operation_params).filter(
        model.vnf_instance_id == vnf_instance_id,
        model.operation == OPERATION).all()
    done = []
    for op_id, text in rows:
        fixed = as_json(text)
        if fixed is None:
            continue
        session.query(model).filter(model.id == op_id).update(
            {model.operation_params: fixed}, synchronize_session=False)
        done.append(op_id)
    return done


def repair(context, vnf_instance_id):
    """Rewrite the operationParams of the instance's MODIFY_INFO
    occurrences that Tacker 16 recorded as a Python literal; the ids
    rewritten. Nothing (an empty list) outside Tacker's conductor, and on
    any failure, which is logged."""
    found = _tacker_database()
    if found is None or not vnf_instance_id:
        return []
    facade, model, context_class = found
    if not isinstance(context, context_class):
        return []
    try:
        with facade.writer.using(context) as session:
            done = rewrite(session, model, vnf_instance_id)
    except Exception as err:  # never fail the operation for Tacker's view
        LOG.warning('Could not rewrite the operationParams of VNF instance '
                    '%s\'s MODIFY_INFO occurrences as JSON (%s): openstack '
                    'vnflcm op show may answer HTTP 500 for them (%s)',
                    vnf_instance_id, type(err).__name__, UPSTREAM)
        return []
    if done:
        LOG.info('Rewrote as JSON the operationParams Tacker recorded as a '
                 'Python literal (%s) of MODIFY_INFO occurrence(s) %s, so '
                 'that Tacker\'s API can show them', UPSTREAM,
                 ', '.join(done))
    return done
