"""Tacker's configuration and database for a lab, in this process.

Every path Tacker writes (the SQLite database, the CSAR store and the
extracted packages, the VIM fernet keys, the coordination locks) lives
under ``<lab state dir>/tacker`` so ``lab down`` removes it with the lab.
"""

import dataclasses
import json
import os

from oslo_log import log as logging
import sqlalchemy

LOG = logging.getLogger(__name__)

SUBDIR = 'tacker'
# Our drivers, as an operator's tacker.conf lists them (each flavour's
# VNFD names one of them).
MGMT_DRIVERS = ['mgmt-drivers-kubernetes', 'mgmt-drivers-kubespray']
# Tacker waits stack_retries * stack_retry_wait seconds for a stack and
# sends timeout_mins = that // 60 to Heat: 10 minutes, polled every 10 s,
# Tacker's default. Not faster: Tacker 16's scale_wait takes a group
# member that real Heat has only recorded (INIT_COMPLETE, no stack yet)
# for done and then asks Heat for the resources of a stack with no id;
# polled every second, it does so right after the signal.
STACK_RETRY_WAIT = 10
STACK_RETRIES = 60
KEY_MANAGER = 'k8s_mgmt_lab.conductor.tacker_harness.keymgr.FileKeyManager'


@dataclasses.dataclass(frozen=True)
class Paths:
    root: str

    @property
    def database(self):
        return os.path.join(self.root, 'tacker.sqlite')

    @property
    def hook_trace(self):           # what Tacker passed to our hooks
        return os.path.join(self.root, 'hooks.jsonl')

    @property
    def csar_path(self):            # vnf_package_csar_path
        return os.path.join(self.root, 'vnfpackages')

    @property
    def csar_store(self):           # glance_store's file backend
        return os.path.join(self.root, 'csar_files')

    @property
    def vim_keys(self):
        return os.path.join(self.root, 'vim_keys')

    @property
    def locks(self):
        return os.path.join(self.root, 'locks')

    def make(self):
        for path in (self.root, self.csar_path, self.csar_store,
                     self.vim_keys, self.locks):
            os.makedirs(path, mode=0o700, exist_ok=True)


def paths_for(state_dir):
    return Paths(os.path.join(state_dir, SUBDIR))


def overrides(paths):
    """(group, option, value) set on tacker.conf.CONF; group None is
    [DEFAULT]."""
    return [
        (None, 'state_path', paths.root),
        # No message bus here: oslo.messaging's in-memory driver, as
        # Tacker's own tests use; the calls Tacker makes over RPC are
        # routed to the conductor in this process (rpc_shim).
        (None, 'transport_url', 'fake:/'),
        # In memory, as in Tacker's own DB tests: oslo.db then gives every
        # session ONE shared connection. Tacker mixes a long-lived session
        # per context with short writer sessions; on MySQL that is fine,
        # but on an SQLite file each is a connection of its own and one's
        # open transaction locks out the other's commit ("database is
        # locked", in the default and in WAL journal modes alike).
        # state.save_database copies it to a file between runs.
        ('database', 'connection', 'sqlite://'),
        ('tacker', 'vnflcm_mgmt_driver', ['vnflcm_noop'] + MGMT_DRIVERS),
        ('tacker', 'infra_driver', ['openstack']),
        ('tacker', 'vnflcm_infra_driver', ['openstack']),
        ('vnf_package', 'vnf_package_csar_path', paths.csar_path),
        ('glance_store', 'stores', ['file']),
        ('glance_store', 'default_store', 'file'),
        ('glance_store', 'filesystem_store_datadir', paths.csar_store),
        ('vim_keys', 'openstack', paths.vim_keys),
        # The OpenStack VIM's key in a key file; the Kubernetes VIM driver
        # (the MgmtDriver registers its cluster as one) has no such choice
        # and needs a key manager: one that keeps keys in files.
        ('vim_keys', 'use_barbican', False),
        ('key_manager', 'api_class', KEY_MANAGER),
        ('coordination', 'backend_url', 'file://' + paths.locks),
        ('openstack_vim', 'stack_retry_wait', STACK_RETRY_WAIT),
        ('openstack_vim', 'stack_retries', STACK_RETRIES),
    ]


def load(state_dir):
    """Parse tacker.conf.CONF with no config file and the lab's
    overrides; return the Paths."""
    import tacker.conf
    from tacker.common import rpc
    # The modules that register the [vim_keys], [k8s_vim] and
    # [openstack_vim] options
    # (tacker-server and tacker-conductor load them through stevedore).
    from tacker import keymgr
    from tacker.nfvo.drivers.vim import kubernetes_driver  # noqa: F401
    from tacker.nfvo.drivers.vim import openstack_driver  # noqa: F401
    from tacker.vnfm.infra_drivers.openstack import openstack  # noqa: F401

    paths = paths_for(state_dir)
    paths.make()
    conf = tacker.conf.CONF
    # What tacker-conductor's main does (tacker.common.config.init):
    # parse, then set up RPC; the overrides go in between so that RPC
    # starts on the fake transport and nothing waits for a broker.
    conf([], project='tacker', default_config_files=[])
    # oslo.messaging registers transport_url on its first transport;
    # register it now so that the first one is already the fake.
    from oslo_messaging import opts as messaging_opts
    for group, opts in messaging_opts.list_opts():
        if group is None:
            conf.register_opts(opts)
    # Registered by tacker.keymgr.API on first use.
    for group, opts in keymgr.config_opts():
        conf.register_opts(opts, group=group)
    for group, name, value in overrides(paths):
        conf.set_override(name, value, group=group)
    rpc.init(conf)
    return paths


def _vim_secrets_as_text(conn, cursor, statement, parameters, context,
                         executemany):
    """Store the VIM's encrypted password as MySQL stores it: as text.

    The NFVO's OpenStack VIM driver keeps the fernet token as bytes and
    writes it to a String column; MySQL stores the string, SQLite a BLOB,
    which reads back as bytes, and ``VimClient`` then fails decoding it
    (``bytes`` has no ``encode``). Only writes to ``vimauths`` change;
    Tacker's LargeBinary columns elsewhere keep their bytes.
    """
    if 'vimauths' not in statement or not (
            statement.startswith('INSERT') or statement.startswith('UPDATE')):
        return statement, parameters

    def text(value):
        return value.decode('ascii') if isinstance(value, bytes) else value
    if isinstance(parameters, dict):
        parameters = {k: text(v) for k, v in parameters.items()}
    elif executemany:
        parameters = [tuple(text(v) for v in row) for row in parameters]
    else:
        parameters = tuple(text(v) for v in parameters)
    return statement, parameters


def json_contains(target, candidate):
    """MySQL's JSON_CONTAINS(target, candidate) on JSON texts: 1 when
    every element of ``candidate`` is in ``target``, else 0."""
    if target is None or candidate is None:
        return None

    def contains(doc, part):
        if isinstance(doc, list):
            parts = part if isinstance(part, list) else [part]
            return all(any(contains(d, p) for d in doc) for p in parts)
        if isinstance(doc, dict) and isinstance(part, dict):
            return all(k in doc and contains(doc[k], v)
                       for k, v in part.items())
        return doc == part
    return int(contains(json.loads(target), json.loads(candidate)))


def _mysql_functions(dbapi_connection, _record):
    """The MySQL functions Tacker's raw SQL uses, on SQLite: the
    conductor's subscription lookup for notifications
    (``tacker.objects.vnf_lcm_subscriptions``) calls JSON_CONTAINS."""
    dbapi_connection.create_function('JSON_CONTAINS', 2, json_contains,
                                     deterministic=True)


def create_database():
    """Every table of Tacker's models, as Tacker's own DB tests make
    them (the models register themselves on import)."""
    from tacker.db import api as db_api
    from tacker.db import model_base
    engine = db_api.get_engine()
    sqlalchemy.event.listen(engine, 'before_cursor_execute',
                            _vim_secrets_as_text, retval=True)
    sqlalchemy.event.listen(engine, 'connect', _mysql_functions)
    # oslo.db connected once already, to test the URL; in memory that
    # one connection is the only one (StaticPool).
    raw = engine.raw_connection()
    try:
        _mysql_functions(raw.driver_connection, None)
    finally:
        raw.close()
    model_base.BASE.metadata.create_all(engine)
    LOG.info('Tacker database: %d tables',
             len(model_base.BASE.metadata.tables))
