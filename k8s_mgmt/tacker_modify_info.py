"""Two defects of Tacker 16's v1 PATCH (operation ``MODIFY_INFO``), worked
around from the driver's modify hooks so that an operator's commands work
on Tacker 16 as released (doc/source/tacker.rst, "Day two through v1").

**The occurrence Tacker cannot show.** Tacker 16.0.0 records the request of
a v1 ``PATCH /vnflcm/v1/vnf_instances/{id}`` as ``str(body)``, a Python
literal (``tacker/api/vnflcm/v1/controller.py``,
``VnfLcmController.update``: ``'operationParams': str(body)``), where
every other operation records ``jsonutils.dumps(body)``. Its own view of
an occurrence then parses that text as JSON (``tacker/api/views/
vnf_lcm.py``, ``ViewBuilder._get_vnf_lcm_op_occs``), so ``GET
/vnflcm/v1/vnf_lcm_op_occs/{id}`` answers 500 (``JSONDecodeError``) for
every MODIFY_INFO occurrence. The conductor calls the modify hooks with the
occurrence already in its database, so :func:`repair` rewrites, in the
conductor's own database session, the ``operationParams`` of the
instance's MODIFY_INFO occurrences that are a Python literal of a dict as
the JSON of the same dict. Text that is JSON already (a Tacker that
records JSON) or no literal of a dict is left alone.

**The VNF left locked by a failed PATCH.** When a modify hook fails,
Tacker's ``revert_update_lcm`` (``tacker/conductor/conductor_server.py``)
sets the VNF's status to ERROR with ``objects.VNF.save()``, whose
``_vnf_update`` (``tacker/objects/vnf.py``) runs outside any enginefacade
transaction, on the request context's legacy session
(``Context.session``): written for SQLAlchemy 1.x's autocommit sessions,
it is never committed under SQLAlchemy 2. The uncommitted UPDATE keeps
the ``vnf`` row locked until the context's connection happens to be
released, so ``openstack vnflcm op fail`` (which locks that row) times
out with HTTP 500, and nobody else sees the ERROR status. Before a modify
hook's error leaves the driver, :func:`autocommit_legacy_session` commits
what the legacy session holds (as Tacker meant) and gives the context a
legacy session that commits each write as it is made, as SQLAlchemy 1.x's
did.

Each workaround does nothing outside a Tacker conductor and logs, never
raises, a failure of its own: it never fails an operation.

**The PATCH's body.** Tacker 16 calls ``modify_information_start`` with
``modify_vnf_request=None``, before it merges the PATCH into the instance;
the body is only in the occurrence it is processing.
:func:`processing_request` reads it from there, for the driver to refuse
a PATCH of its own keys before Tacker applies it.
"""

import ast
import json

from oslo_log import log as logging

from k8s_mgmt import exceptions

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


def as_dict(text):
    """The dict an occurrence's ``operationParams`` records (JSON, or
    Tacker 16's Python literal), or None."""
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except ValueError:
            fixed = as_json(text)
            value = json.loads(fixed) if fixed is not None else None
        if isinstance(value, dict):
            return value
    return None


class UnreadableRequest(exceptions.MgmtDriverError):
    """The PATCH a Tacker conductor is processing cannot be read: refused,
    since it might set or remove the driver's own metadata."""

    message = ('cannot read the PATCH of VNF instance %(instance)s from '
               'Tacker\'s database (%(reason)s): refused, as it might '
               'change k8s-mgmt\'s own metadata')


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


def processing_request(context, vnf_instance_id):
    """The body of the instance's MODIFY_INFO occurrence Tacker's conductor
    is processing (a dict); None outside a Tacker conductor.
    UnreadableRequest when the conductor's database holds none that
    reads as a dict."""
    found = _tacker_database()
    if found is None or not vnf_instance_id:
        return None
    facade, model, context_class = found
    if not isinstance(context, context_class):
        return None
    try:
        with facade.reader.using(context) as session:
            row = session.query(model.operation_params).filter(
                model.vnf_instance_id == vnf_instance_id,
                model.operation == OPERATION,
                model.operation_state == 'PROCESSING').order_by(
                    model.start_time.desc()).first()
    except Exception as err:
        raise UnreadableRequest(instance=vnf_instance_id,
                                reason=type(err).__name__)
    if row is None:
        raise UnreadableRequest(instance=vnf_instance_id, reason='no '
                                'MODIFY_INFO occurrence is PROCESSING')
    body = as_dict(row[0])
    if body is None:
        raise UnreadableRequest(instance=vnf_instance_id,
                                reason='its operationParams is no object')
    return body


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


def _committing_session_class():
    from sqlalchemy import orm

    class CommittingSession(orm.Session):
        """Every INSERT, UPDATE or DELETE committed as it is run: the
        autocommit of SQLAlchemy 1.x's sessions, which Tacker 16's writes
        through a context's legacy session assume."""

        def execute(self, statement, *args, **kwargs):
            result = super().execute(statement, *args, **kwargs)
            if getattr(statement, 'is_dml', False):
                self.commit()
            return result

    return CommittingSession


def autocommit_legacy_session(context):
    """Give Tacker's request ``context`` a legacy session that commits each
    write (its pending work committed first), for Tacker 16's revert of a
    failed PATCH; whether it did."""
    found = _tacker_database()
    if found is None:
        return False
    facade, _model, context_class = found
    if not isinstance(context, context_class) or \
            not hasattr(context, '_session'):
        return False
    try:
        session = _committing_session_class()(
            bind=facade.writer.get_engine())
        old = context._session
        if old is not None:
            # What Tacker wrote through it, as its autocommit-era code
            # meant it to be.
            old.commit()
        context._session = session
    except Exception as err:  # never fail the operation for Tacker's revert
        LOG.warning('Could not give the failed PATCH\'s revert a session '
                    'that commits (%s): Tacker 16 may leave the VNF\'s row '
                    'locked and "openstack vnflcm op fail" answer HTTP 500 '
                    'until its conductor releases the connection',
                    type(err).__name__)
        return False
    return True
