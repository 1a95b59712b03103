"""Cases run by test_tacker_compat.py in a process of their own.

The driver as Tacker's conductor sees it: real tacker from PyPI, no mocks.

Loaded through Tacker's own DriverManager from our real entry point, checked
against Tacker's abstract class, and called with real Tacker objects and the
keyword arguments the conductor passes (ANCHORS.md).
"""

import copy
import datetime
import inspect
import json
import pathlib
import uuid

import pytest

tacker = pytest.importorskip('tacker', reason='tacker extra not installed')

from tacker.common import driver_manager  # noqa: E402
from tacker.common import utils as tacker_utils  # noqa: E402
from tacker import context as tacker_context  # noqa: E402
from tacker import objects  # noqa: E402
from tacker.vnfm.mgmt_drivers import vnflcm_abstract_driver  # noqa: E402

from k8s_mgmt import exceptions  # noqa: E402

pytestmark = pytest.mark.tacker

SAMPLES = (pathlib.Path(__file__).resolve().parents[3] / 'k8s_mgmt' /
           'samples' / 'requests')
NAMESPACE = 'tacker.tacker.mgmt.drivers'
DRIVER = 'mgmt-drivers-kubernetes'


@pytest.fixture(scope='module')
def manager():
    objects.register_all()
    return driver_manager.DriverManager(NAMESPACE, [DRIVER])


@pytest.fixture(autouse=True)
def driver_paths(tmp_path):
    """The driver's state directory and state key in the test's own
    directory, never the host's /var/lib and /etc."""
    from tests.helpers.driver_paths import driver_paths
    with driver_paths(tmp_path / 'state', tmp_path / 'keys' / 'state.key'):
        yield tmp_path


@pytest.fixture(scope='module')
def tacker_database():
    """Tacker's VIM tables in an in-memory SQLite database, patched into
    Tacker's global enginefacade for these cases only (the cases of
    modify_info_cases.py, in the same process, start it on their own
    database afterwards): instantiate_start lists the VIMs under the
    request's vim_name through Tacker's NFVO plugin, as in
    tacker-conductor."""
    import sqlalchemy
    from oslo_db.sqlalchemy import enginefacade
    from oslo_db.sqlalchemy import orm as db_orm
    from sqlalchemy import pool
    from tacker.db import api as db_api
    from tacker.db.nfvo import nfvo_db
    engine = sqlalchemy.create_engine('sqlite://',
                                      poolclass=pool.StaticPool)
    nfvo_db.Vim.__table__.create(engine)
    nfvo_db.VimAuth.__table__.create(engine)
    factory = enginefacade._TestTransactionFactory(
        engine, db_orm.get_maker(engine=engine), apply_global=False,
        from_factory=db_api.context_manager._factory)
    restore = db_api.context_manager.patch_factory(factory)
    legacy, db_api._FACADE = db_api._FACADE, db_api.context_manager.writer
    yield engine
    db_api._FACADE = legacy
    restore()
    engine.dispose()


@pytest.fixture
def ctx(tacker_database, driver_paths):
    """An admin's request context. The NFVO plugin's OpenStack VIM driver
    makes its key directory when loaded: the test's, never /etc/tacker
    (set here: driver_paths' config fixture resets every override)."""
    from oslo_config import cfg
    from tacker.nfvo.drivers.vim import openstack_driver  # noqa: F401
    cfg.CONF.set_override('openstack', str(driver_paths / 'vim_keys'),
                          group='vim_keys')
    return tacker_context.Context(user_id='user', project_id='project',
                                  is_admin=True)


def _vim_of_another_project(ctx, name):
    """A VIM another project registered under ``name``, in Tacker's tables
    (as its NFVO plugin writes them, without a VIM driver)."""
    from tacker.db.nfvo import nfvo_db
    vim_id = str(uuid.uuid4())
    with ctx.session.begin(nested=True):
        ctx.session.add(nfvo_db.Vim(
            id=vim_id, tenant_id='project-other', type='openstack',
            name=name, description='theirs', placement_attr={},
            is_default=False, extra={},
            deleted_at=datetime.datetime(1, 1, 1)))  # Tacker's "not deleted"
        ctx.session.add(nfvo_db.VimAuth(
            id=str(uuid.uuid4()), vim_id=vim_id, auth_url='https://k/v3',
            vim_project={'name': 'other'}, auth_cred={}))
        ctx.session.commit()        # as Tacker's NFVO database plugin does
    return vim_id


def _request_body(flavour):
    return json.loads((SAMPLES / ('%s.json' % flavour)).read_text())


def _instance(stored_params=None, flavour='complex'):
    inst_id = str(uuid.uuid4())
    instance = objects.VnfInstance(
        id=inst_id, vnfd_id=str(uuid.uuid4()), vnf_provider='Company',
        vnf_product_name='Sample VNF', vnf_software_version='1.0',
        vnfd_version='1.0', tenant_id='project', vnf_pkg_id=str(uuid.uuid4()),
        instantiation_state='INSTANTIATED')
    if stored_params is not None:
        instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
            flavour_id=flavour, vnf_instance_id=inst_id, ext_cp_info=[],
            vnf_state='STARTED', instance_id=str(uuid.uuid4()),
            additional_params=stored_params)
    return instance


def _stored_form(flavour):
    # Exactly what Tacker stores: its own snake->camel conversion.
    params = _request_body(flavour)['additionalParams']
    return tacker_utils.convert_snakecase_to_camelcase(copy.deepcopy(params))


def test_loaded_by_tackers_driver_manager(manager):
    driver = manager[DRIVER]
    assert isinstance(driver,
                      vnflcm_abstract_driver.VnflcmMgmtAbstractDriver)
    assert driver.get_type() == DRIVER
    assert DRIVER in manager


def test_every_hook_has_tackers_signature(manager):
    driver = manager[DRIVER]
    base = vnflcm_abstract_driver.VnflcmMgmtAbstractDriver
    abstract = sorted(base.__abstractmethods__)
    assert 'instantiate_end' in abstract
    for name in abstract:
        ours = inspect.signature(getattr(driver, name))
        theirs = inspect.signature(getattr(base, name))
        # Compare without ``self``: ours is bound.
        theirs_params = list(theirs.parameters.values())[1:]
        assert list(ours.parameters.values()) == theirs_params, name


def test_instantiate_start_accepts_a_valid_request(manager, ctx):
    body = _request_body('complex')
    request = objects.InstantiateVnfRequest(
        flavour_id=body['flavourId'],
        additional_params=body['additionalParams'])
    result = manager.invoke(DRIVER, 'instantiate_start', context=ctx,
                            vnf_instance=_instance(),
                            instantiate_vnf_request=request,
                            grant=None, grant_request=None)
    assert result is None


def test_instantiate_start_refuses_a_vim_name_another_vim_holds(manager,
                                                                ctx):
    """Tacker lists every project's VIMs to an admin: one under the
    request's vim_name is refused, naming its id, project and type."""
    body = _request_body('complex')
    name = body['additionalParams']['k8s_cluster_installation_param'].get(
        'vim_name') or 'clash-%s' % uuid.uuid4().hex[:8]
    body['additionalParams']['k8s_cluster_installation_param'][
        'vim_name'] = name
    theirs = _vim_of_another_project(ctx, name)
    request = objects.InstantiateVnfRequest(
        flavour_id=body['flavourId'],
        additional_params=body['additionalParams'])
    with pytest.raises(exceptions.MgmtDriverError) as err:
        manager.invoke(DRIVER, 'instantiate_start', context=ctx,
                       vnf_instance=_instance(),
                       instantiate_vnf_request=request,
                       grant=None, grant_request=None)
    text = str(err.value)
    assert theirs in text and 'project-other' in text
    assert 'openstack' in text and '\n' not in text


def test_instantiate_start_refuses_bad_input_with_every_problem(manager, ctx):
    params = _request_body('complex')['additionalParams']
    install = params['k8s_cluster_installation_param']
    install['master_node']['pod_cidr'] = '300.1.0.0/16'
    install['worker_node']['username'] = ''
    install['master_node']['password'] = 'Xq9-very-secret-pw'
    request = objects.InstantiateVnfRequest(flavour_id='complex',
                                            additional_params=params)
    with pytest.raises(exceptions.ValidationError) as err:
        manager.invoke(DRIVER, 'instantiate_start', context=ctx,
                       vnf_instance=_instance(),
                       instantiate_vnf_request=request,
                       grant=None, grant_request=None)
    paths = [p for p, _m in err.value.problems]
    assert ('k8s_cluster_installation_param.master_node.pod_cidr' in paths)
    assert ('k8s_cluster_installation_param.worker_node.username' in paths)
    # Secrets from the request never reach the error Tacker stores.
    assert 'Xq9-very-secret-pw' not in str(err.value)
    assert 'Xq9-very-secret-pw' not in repr(err.value.problems)


def test_instantiate_end_without_reachable_heat_names_the_stack(manager,
                                                                ctx):
    # No Tacker DB here, so no VIM can be resolved for the instance: the
    # driver must say which stack it could not read, not raise a traceback
    # from Tacker's internals (and touch no VM).
    body = _request_body('complex')
    request = objects.InstantiateVnfRequest(
        flavour_id='complex', additional_params=body['additionalParams'])
    instance = _instance(_stored_form('complex'))
    with pytest.raises(exceptions.TopologyError) as err:
        manager.invoke(DRIVER, 'instantiate_end', context=ctx,
                       vnf_instance=instance,
                       instantiate_vnf_request=request, grant=None,
                       grant_request=None, vnf={'id': 'x'})
    assert instance.instantiated_vnf_info.instance_id in str(err.value)
    assert 'ubuntu' not in str(err.value)  # the sample's SSH password


def test_scale_in_reads_the_stored_camelcase_params(manager, ctx):
    # The stored (camelCase) parameters validate, so the operation gets as
    # far as Heat; with no Tacker DB it stops there, naming the stack.
    request = objects.ScaleVnfRequest(type='SCALE_IN',
                                      aspect_id='worker_instance',
                                      number_of_steps=1,
                                      additional_params={})
    instance = _instance(_stored_form('complex'))
    with pytest.raises(exceptions.TopologyError) as err:
        manager.invoke(DRIVER, 'scale_start', context=ctx,
                       vnf_instance=instance,
                       scale_vnf_request=request, grant=None,
                       grant_request=None, scale_name_list=['member-a'],
                       scale_out_id_list=[], vnf={'id': 'x'})
    assert instance.instantiated_vnf_info.instance_id in str(err.value)


def test_scale_with_broken_stored_params_is_a_validation_error(manager, ctx):
    stored = _stored_form('complex')
    del stored['k8sClusterInstallationParam']['masterNode']
    request = objects.ScaleVnfRequest(type='SCALE_IN',
                                      aspect_id='worker_instance',
                                      number_of_steps=1)
    with pytest.raises(exceptions.ValidationError) as err:
        manager.invoke(DRIVER, 'scale_start', context=ctx,
                       vnf_instance=_instance(stored),
                       scale_vnf_request=request, grant=None,
                       grant_request=None, scale_name_list=[],
                       scale_out_id_list=[], vnf={'id': 'x'})
    assert any(p.endswith('master_node') for p, _m in err.value.problems)


def test_hooks_the_seeds_do_not_use_return_quietly(manager, ctx):
    instance = _instance(_stored_form('simple'), flavour='simple')
    assert manager.invoke(DRIVER, 'modify_information_start', context=ctx,
                          vnf_instance=instance,
                          modify_vnf_request=None) is None
    assert manager.invoke(DRIVER, 'terminate_start', context=ctx,
                          vnf_instance=instance,
                          terminate_vnf_request=None, grant=None,
                          grant_request=None) is None


def test_driver_keeps_no_per_operation_state(manager, ctx):
    driver = manager[DRIVER]
    body = _request_body('simple')
    request = objects.InstantiateVnfRequest(
        flavour_id='simple', additional_params=body['additionalParams'])
    driver.instantiate_start(context=ctx, vnf_instance=_instance(),
                             instantiate_vnf_request=request, grant=None,
                             grant_request=None)
    assert vars(driver) == {}


def test_heal_block_storage_follows_tackers_own_options():
    """Our defaults are Tacker's; with its [vnf_lcm] options registered,
    as in tacker-conductor, an operator's tacker.conf decides."""
    from oslo_config import cfg
    from tacker.conf import vnf_lcm

    from k8s_mgmt import tacker_settings
    conf = cfg.ConfigOpts()
    vnf_lcm.register_opts(conf)
    found = tacker_settings.heal_block_storage(conf)
    assert (found.key, found.default, found.from_tacker) == (
        tacker_settings.BLOCK_STORAGE_KEY,
        tacker_settings.BLOCK_STORAGE_DEFAULT, True)
    conf.set_override('heal_include_block_storage_key', 'keep_disks',
                      group='vnf_lcm')
    conf.set_override('heal_vnfc_block_storage', False, group='vnf_lcm')
    found = tacker_settings.heal_block_storage(conf)
    assert (found.key, found.default) == ('keep_disks', False)
    assert tacker_settings.heal_block_storage(cfg.ConfigOpts()) == \
        tacker_settings.HealBlockStorage()
