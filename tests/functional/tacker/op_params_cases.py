"""Cases run by test_tacker_compat.py in a process of their own: Tacker 16's
v1 MODIFY_INFO occurrence as its own code records and shows it, on Tacker's
own models in an SQLite database, before and after the driver's
modify_information_start (k8s_mgmt.tacker_op_params).
"""

import datetime
import json
import uuid

import pytest

tacker = pytest.importorskip('tacker', reason='tacker extra not installed')

from oslo_config import cfg  # noqa: E402
from oslo_db import options as db_options  # noqa: E402
from tacker.api.views import vnf_lcm as vnf_lcm_view  # noqa: E402
from tacker.common import driver_manager  # noqa: E402
from tacker import context as tacker_context  # noqa: E402
from tacker.db import api as db_api  # noqa: E402
from tacker.db.db_sqlalchemy import models  # noqa: E402
from tacker import objects  # noqa: E402

from k8s_mgmt import tacker_op_params  # noqa: E402

pytestmark = pytest.mark.tacker

DRIVER = 'mgmt-drivers-kubernetes'
BODY = {'metadata': {'k8sMgmtUpgrade': '1.36', 'note': "it's \"quoted\"",
                     'flag': True, 'nothing': None}}


@pytest.fixture(scope='module')
def database():
    """Tacker's global enginefacade on an in-memory SQLite database with
    the op-occurrence table (Tacker reads [database] connection when it
    first opens a session)."""
    objects.register_all()
    db_options.set_defaults(cfg.CONF)
    cfg.CONF.set_override('connection', 'sqlite://', group='database')
    engine = db_api.context_manager.writer.get_engine()
    models.VnfLcmOpOccs.__table__.create(engine)
    yield engine
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
    assert tacker_op_params.repair(ctx, instance.id) == []


def test_nothing_is_rewritten_without_a_tacker_context(database):
    op_id = str(uuid.uuid4())
    assert tacker_op_params.repair({'user': 'x'}, op_id) == []
    assert tacker_op_params.repair(None, op_id) == []
