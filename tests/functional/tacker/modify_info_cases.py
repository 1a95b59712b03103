"""Cases run by test_tacker_compat.py in a process of their own: Tacker
16's v1 PATCH (MODIFY_INFO) as its own code records, shows and reverts it,
on Tacker's own models in an SQLite database file, with and without the
driver's workarounds (k8s_mgmt.tacker_modify_info).
"""

import datetime
import json
import uuid

import pytest
import sqlalchemy

tacker = pytest.importorskip('tacker', reason='tacker extra not installed')

from oslo_config import cfg  # noqa: E402
from oslo_db import options as db_options  # noqa: E402
from tacker.api.views import vnf_lcm as vnf_lcm_view  # noqa: E402
from tacker.common import driver_manager  # noqa: E402
from tacker import context as tacker_context  # noqa: E402
from tacker.db import api as db_api  # noqa: E402
from tacker.db.db_sqlalchemy import models  # noqa: E402
from tacker.db.vnfm import vnfm_db  # noqa: E402
from tacker import objects  # noqa: E402

from k8s_mgmt import tacker_modify_info  # noqa: E402

pytestmark = pytest.mark.tacker

DRIVER = 'mgmt-drivers-kubernetes'
BODY = {'metadata': {'k8sMgmtUpgrade': '1.36', 'note': "it's \"quoted\"",
                     'flag': True, 'nothing': None}}


@pytest.fixture(scope='module')
def database(tmp_path_factory):
    """Tacker's global enginefacade on an SQLite database file (another
    connection sees only what was committed) with the tables the cases
    use (Tacker reads [database] connection when it first opens a
    session); the URL."""
    objects.register_all()
    db_options.set_defaults(cfg.CONF)
    url = 'sqlite:///%s' % (tmp_path_factory.mktemp('db') / 'tacker.db')
    cfg.CONF.set_override('connection', url, group='database')
    engine = db_api.context_manager.writer.get_engine()
    # Started here (SQLite without foreign keys: the cases make only the
    # tables they use): Tacker's legacy sessions must not configure it
    # again (tacker.db.api._create_facade_lazily).
    db_api._FACADE = db_api.context_manager.writer
    models.VnfLcmOpOccs.__table__.create(engine)
    vnfm_db.VNF.__table__.create(engine)
    yield url
    cfg.CONF.clear_override('connection', group='database')


@pytest.fixture
def ctx():
    return tacker_context.Context(user_id='user', project_id='project',
                                  is_admin=True)


def _record(ctx, instance_id, operation, params):
    """An occurrence as Tacker's conductor creates it (VnfLcmOpOcc.create
    with the API's operationParams)."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    occurrence = objects.VnfLcmOpOcc(
        context=ctx, id=str(uuid.uuid4()), operation_state='PROCESSING',
        state_entered_time=now, start_time=now,
        vnf_instance_id=instance_id, operation=operation,
        is_automatic_invocation=False, is_cancel_pending=False,
        operation_params=params, tenant_id='project', error_point=0)
    occurrence.create()
    return occurrence.id


def _shown(ctx, op_id):
    """What ``GET /vnflcm/v1/vnf_lcm_op_occs/{id}`` answers (Tacker's own
    object and view)."""
    occurrence = objects.VnfLcmOpOcc.get_by_id(ctx, op_id)
    return vnf_lcm_view.ViewBuilder().show_lcm_op_occs(occurrence)


def test_tackers_own_view_fails_on_what_its_update_records(database, ctx):
    # The defect, as Tacker 16 has it: str(body), then json.loads.
    op_id = _record(ctx, str(uuid.uuid4()), 'MODIFY_INFO', str(BODY))
    with pytest.raises(json.JSONDecodeError):
        _shown(ctx, op_id)


def test_modify_information_start_makes_the_occurrence_showable(database,
                                                                ctx):
    instance = objects.VnfInstance(context=ctx, id=str(uuid.uuid4()),
                                   vnf_metadata={})
    broken = _record(ctx, instance.id, 'MODIFY_INFO', str(BODY))
    already = _record(ctx, instance.id, 'MODIFY_INFO', json.dumps(BODY))
    other = _record(ctx, str(uuid.uuid4()), 'MODIFY_INFO', str(BODY))
    scale = _record(ctx, instance.id, 'SCALE', json.dumps({'type': 'X'}))
    manager = driver_manager.DriverManager('tacker.tacker.mgmt.drivers',
                                           [DRIVER])
    assert manager.invoke(DRIVER, 'modify_information_start', context=ctx,
                          vnf_instance=instance,
                          modify_vnf_request=None) is None
    assert _shown(ctx, broken)['operationParams'] == BODY
    # JSON already (a Tacker that records JSON): left as it was.
    assert _shown(ctx, already)['operationParams'] == BODY
    # Another instance's occurrence is not this hook's business.
    with pytest.raises(json.JSONDecodeError):
        _shown(ctx, other)
    assert _shown(ctx, scale)['operationParams'] == {'type': 'X'}
    # Done once: nothing left to rewrite.
    assert tacker_modify_info.repair(ctx, instance.id) == []


def test_nothing_is_rewritten_without_a_tacker_context(database):
    op_id = str(uuid.uuid4())
    assert tacker_modify_info.repair({'user': 'x'}, op_id) == []
    assert tacker_modify_info.repair(None, op_id) == []


def _vnf(url):
    """A VNF row, ACTIVE, committed by a connection of its own; its id."""
    vnf_id = str(uuid.uuid4())
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as conn:
        conn.execute(vnfm_db.VNF.__table__.insert().values(
            id=vnf_id, tenant_id='project', name=vnf_id, status='ACTIVE',
            vim_id=str(uuid.uuid4()), deleted_at=datetime.datetime(1, 1, 1)))
    engine.dispose()
    return vnf_id


def _revert(ctx, vnf_id):
    """What Tacker 16's revert_update_lcm does to the VNF after a modify
    hook failed: objects.VNF.save(), on the hook's context."""
    vnf = objects.vnf.VNF(context=ctx)
    vnf.id = vnf_id
    vnf.status = 'ERROR'
    vnf.updated_at = datetime.datetime.now(
        datetime.timezone.utc).replace(tzinfo=None)
    vnf.save()


def _from_another_connection(url, vnf_id):
    """The VNF's status as another connection reads it, and whether that
    connection may write the row at once (op fail locks and updates it)."""
    engine = sqlalchemy.create_engine(url, connect_args={'timeout': 0.2})
    table = vnfm_db.VNF.__table__
    try:
        with engine.connect() as conn:
            status = conn.execute(sqlalchemy.select(table.c.status).where(
                table.c.id == vnf_id)).scalar()
        try:
            with engine.begin() as conn:
                conn.execute(table.update().where(table.c.id == vnf_id)
                             .values(status=status))
            writable = True
        except sqlalchemy.exc.OperationalError as err:
            assert 'locked' in str(err), err
            writable = False
    finally:
        engine.dispose()
    return status, writable


def test_tackers_revert_of_a_failed_patch_leaves_its_write_open(database):
    ctx = tacker_context.Context(user_id='user', project_id='project',
                                 is_admin=True)
    vnf_id = _vnf(database)
    _revert(ctx, vnf_id)
    try:
        # Never committed: nobody sees ERROR, and the row stays locked.
        assert _from_another_connection(database, vnf_id) == ('ACTIVE',
                                                              False)
    finally:
        ctx.session.close()


def test_the_driver_gives_the_revert_a_session_that_commits(database):
    ctx = tacker_context.Context(user_id='user', project_id='project',
                                 is_admin=True)
    vnf_id = _vnf(database)
    # A read through the legacy session before, as the conductor's VIM
    # lookups make: its work is committed, not lost.
    ctx.session.execute(sqlalchemy.text('SELECT 1'))
    assert tacker_modify_info.autocommit_legacy_session(ctx)
    _revert(ctx, vnf_id)
    assert _from_another_connection(database, vnf_id) == ('ERROR', True)


def test_a_failed_patch_through_the_driver_arms_the_revert(database):
    """modify_information_end fails (a bad version in the metadata); the
    revert that follows commits."""
    ctx = tacker_context.Context(user_id='user', project_id='project',
                                 is_admin=True)
    vnf_id = _vnf(database)
    instance = objects.VnfInstance(context=ctx, id=str(uuid.uuid4()),
                                   vnf_metadata={'k8sMgmtUpgrade': 'latest'})
    manager = driver_manager.DriverManager('tacker.tacker.mgmt.drivers',
                                           [DRIVER])
    from k8s_mgmt import exceptions
    with pytest.raises(exceptions.ValidationError):
        manager.invoke(DRIVER, 'modify_information_end', context=ctx,
                       vnf_instance=instance, modify_vnf_request=None)
    _revert(ctx, vnf_id)
    assert _from_another_connection(database, vnf_id) == ('ERROR', True)


def _start(ctx, instance):
    manager = driver_manager.DriverManager('tacker.tacker.mgmt.drivers',
                                           [DRIVER])
    return manager.invoke(DRIVER, 'modify_information_start', context=ctx,
                          vnf_instance=instance, modify_vnf_request=None)


@pytest.mark.parametrize('metadata', [
    {'k8sMgmtState': None},
    {'k8sMgmtState': 'v1.0123abcd.gAAAA-an-older-seal',
     'k8sMgmtUpgrade': '1.36'},
    {'k8sMgmtRegistryCaSha256': 'f' * 64}], ids=['removed', 'replayed',
                                                 'registry'])
def test_a_patch_of_the_drivers_keys_is_refused_before_tacker_merges_it(
        database, ctx, metadata):
    """Tacker 16 passes no request to modify_information_start: the body
    is read from the occurrence it is processing, as Tacker recorded it."""
    instance = objects.VnfInstance(
        context=ctx, id=str(uuid.uuid4()),
        vnf_metadata={'k8sMgmtState': 'v1.0123abcd.gAAAA-the-current-seal'})
    _record(ctx, instance.id, 'MODIFY_INFO', str({'metadata': metadata}))
    from k8s_mgmt import exceptions
    with pytest.raises(exceptions.ValidationError) as err:
        _start(ctx, instance)
    [(path, message)] = err.value.problems
    assert path == 'metadata.' + next(k for k in metadata
                                      if k != 'k8sMgmtUpgrade')
    assert message.startswith('kept by k8s-mgmt: a PATCH may not set')
    assert '\n' not in str(err.value)


def test_a_day_two_patch_passes_modify_information_start(database, ctx):
    instance = objects.VnfInstance(context=ctx, id=str(uuid.uuid4()),
                                   vnf_metadata={})
    _record(ctx, instance.id, 'MODIFY_INFO', str({'metadata': {
        'k8sMgmtUpgrade': '1.36', 'owner': 'team-a'}}))
    assert _start(ctx, instance) is None


def test_a_patch_tacker_does_not_hold_is_refused(database, ctx):
    """In a Tacker conductor without the occurrence (or its text) the
    driver cannot tell what the PATCH changes: refused."""
    from k8s_mgmt import tacker_modify_info
    instance = objects.VnfInstance(context=ctx, id=str(uuid.uuid4()),
                                   vnf_metadata={})
    with pytest.raises(tacker_modify_info.UnreadableRequest) as err:
        _start(ctx, instance)
    assert 'no MODIFY_INFO occurrence is PROCESSING' in str(err.value)
