"""The control plane's configuration files, rendered from its layout,
ports and secrets: pure functions of their arguments, so a test reads
the text without starting anything."""

import os
import textwrap

from k8s_mgmt_lab.kube import layer

# The host every service binds to and every URL names.
HOST = '127.0.0.1'

# What [tacker] vnflcm_mgmt_driver names: Tacker's own no-op driver and
# the two of k8s-mgmt (entry points of tacker.tacker.mgmt.drivers).
TACKER_MGMT_DRIVERS = ('vnflcm_noop', 'mgmt-drivers-kubernetes',
                       'mgmt-drivers-kubespray')

# oslo.log's quiet libraries, and Tacker's driver manager at DEBUG: the
# conductor's log then names the management drivers it loaded.
TACKER_LOG_LEVELS = ('amqp=WARN', 'sqlalchemy=WARN', 'oslo_messaging=INFO',
                     'urllib3.connectionpool=WARN', 'keystonemiddleware=WARN',
                     'routes.middleware=WARN', 'stevedore=WARN',
                     'keystoneauth=WARN', 'tacker.common.driver_manager=DEBUG')


def mariadb_cnf(layout, ports):
    """my.cnf: loopback only; clients use the socket, as root may log in
    only there. Temporary files stay in the state directory: a mariadbd
    starting removes every ``#sql*`` file of its tmpdir, so two planes
    sharing /tmp break each other's mariadb-install-db."""
    return textwrap.dedent("""\
        [mysqld]
        user = root
        bind-address = {host}
        port = {port}
        datadir = {datadir}
        socket = {socket}
        pid-file = {run}/mariadbd.pid
        tmpdir = {run}
        skip-name-resolve
        innodb_buffer_pool_size = 128M
        performance_schema = OFF
        character-set-server = utf8mb4
        max_connections = 200

        [client]
        socket = {socket}
        """).format(host=HOST, port=ports['mariadb'],
                    datadir=layout.mariadb_data, socket=layout.mariadb_socket,
                    run=layout.run, logs=layout.logs)


def rabbitmq_env(layout, ports, node):
    """The environment of rabbitmq-server and rabbitmqctl: every path in
    the state directory, every listener (epmd's too) on loopback."""
    base = layout.rabbitmq
    return {
        'HOME': base,
        'RABBITMQ_NODENAME': node,
        'RABBITMQ_NODE_IP_ADDRESS': HOST,
        'RABBITMQ_NODE_PORT': str(ports['rabbitmq']),
        'RABBITMQ_DIST_PORT': str(ports['rabbitmq_dist']),
        'ERL_EPMD_ADDRESS': HOST,
        'ERL_EPMD_PORT': str(ports['epmd']),
        'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
            '-kernel inet_dist_use_interface {127,0,0,1}',
        'RABBITMQ_CONF_ENV_FILE': base + '/rabbitmq-env.conf',
        'RABBITMQ_CONFIG_FILE': base + '/rabbitmq',
        'RABBITMQ_ADVANCED_CONFIG_FILE': base + '/advanced.config',
        'RABBITMQ_ENABLED_PLUGINS_FILE': base + '/enabled_plugins',
        'RABBITMQ_MNESIA_BASE': base + '/mnesia',
        'RABBITMQ_LOG_BASE': layout.logs,
        'RABBITMQ_LOGS': layout.logs + '/rabbitmq-server.log',
        'RABBITMQ_PID_FILE': layout.run + '/rabbitmq-server.pid',
    }


def rabbitmq_conf():
    """rabbitmq.conf: the guest account stays loopback-only."""
    return 'loopback_users.guest = true\n'


def keystone_conf(layout, ports, secrets):
    return textwrap.dedent("""\
        [DEFAULT]
        use_stderr = true
        log_dir =

        [database]
        connection = mysql+pymysql://keystone:{db}@{host}:{mariadb}/keystone

        [identity]
        # bcrypt at 4 rounds, not Keystone's 12: every password login (the
        # heat user's on each stack action, every lab and driver client)
        # costs a verify, 0.38 s of CPU at 12 rounds on this machine and
        # 2 ms at 4, and the lab's labs log in thousands of times. A
        # production Keystone keeps the default.
        password_hash_rounds = 4

        [cache]
        # Keystone's own cache (role assignments, catalog, tokens): off by
        # default, and without it every token issued or validated lists
        # the user's role assignments in SQL (most of Keystone's CPU under
        # the lab lane). In-process memory is coherent here: one gunicorn
        # worker process (see _gunicorn_serving), which invalidates what
        # it changes; production uses memcached across processes.
        enabled = true
        backend = dogpile.cache.memory

        [token]
        provider = fernet

        [fernet_tokens]
        key_repository = {etc}/fernet-keys

        [credential]
        key_repository = {etc}/credential-keys

        [oslo_concurrency]
        lock_path = {etc}/locks
        """).format(db=secrets['keystone_db'], host=HOST,
                    mariadb=ports['mariadb'], etc=layout.keystone_etc)


def keystone_gunicorn(layout, ports):
    """Keystone's gunicorn.conf.py: every setting here, none on gunicorn's
    command line, because Keystone's oslo.config parses sys.argv."""
    return _gunicorn_serving('keystone.wsgi.api:application',
                             ports['keystone']) + textwrap.dedent("""\
        raw_env = ['OS_KEYSTONE_CONFIG_DIR={etc}',
                   'OS_KEYSTONE_CONFIG_FILES=keystone.conf']
        """).format(etc=layout.keystone_etc)


def _gunicorn_serving(wsgi_app, port):
    """The lines every gunicorn.conf.py of the plane shares: the
    application, 127.0.0.1 and its port, one worker of 4 threads, no
    control socket (gunicorn 27 would make one under $HOME)."""
    return textwrap.dedent("""\
        wsgi_app = '{app}'
        bind = '{host}:{port}'
        workers = 1
        worker_class = 'gthread'
        threads = 4
        timeout = 120
        # Idle kept-alive connections stay open 30 s, not gunicorn's 2 s:
        # a client polling every 2 s would otherwise often send its next
        # request just as the server closes the connection.
        keepalive = 30
        control_socket_disable = True
        """).format(app=wsgi_app, host=HOST, port=port)


def heat_conf(layout, ports, secrets):
    auth_url = keystone_url(ports)
    return textwrap.dedent("""\
        [DEFAULT]
        use_stderr = true
        transport_url = rabbit://openstack:{rabbit}@{host}:{rabbit_port}/
        num_engine_workers = 1
        graceful_shutdown_timeout = 5
        enable_stack_abandon = true
        region_name_for_services = RegionOne
        stack_user_domain_name = heat
        stack_domain_admin = heat_domain_admin
        stack_domain_admin_password = {domain_admin}
        heat_metadata_server_url = http://{host}:{heat_api}
        heat_waitcondition_server_url = {waitcondition}
        environment_dir = {etc}/environment.d
        template_dir = {etc}/templates
        plugin_dirs = {etc}/plugins

        [database]
        connection = mysql+pymysql://heat:{db}@{host}:{mariadb}/heat

        [paste_deploy]
        api_paste_config = {etc}/api-paste.ini

        {authtoken}

        [trustee]
        auth_type = password
        auth_url = {auth_url}
        username = heat
        password = {heat}
        user_domain_name = Default

        [clients_keystone]
        auth_uri = {auth_url}

        [oslo_concurrency]
        lock_path = {etc}/locks
        """).format(rabbit=secrets['rabbitmq'], host=HOST,
                    rabbit_port=ports['rabbitmq'],
                    domain_admin=secrets['heat_domain_admin'],
                    heat_api=ports['heat_api'], etc=layout.heat_etc,
                    db=secrets['heat_db'], mariadb=ports['mariadb'],
                    auth_url=auth_url, heat=secrets['heat'],
                    authtoken=_authtoken(ports, 'heat', secrets['heat']),
                    waitcondition='http://%s:%d/v1/waitcondition' % (
                        HOST, ports['heat_api']))


def heat_gunicorn(layout, ports):
    """heat-api's gunicorn.conf.py: Heat's oslo.config parses sys.argv,
    so this file rewrites it before the workers are forked."""
    return textwrap.dedent("""\
        import sys

        sys.argv = ['heat-api', '--config-file', '{etc}/heat.conf']
        """).format(etc=layout.heat_etc) + _gunicorn_serving(
            'heat.wsgi.api:application', ports['heat_api'])


def tacker_dirs(layout):
    """The directories tacker.conf names, by what Tacker keeps there."""
    data = layout.tacker_data
    return {'crypt_keys': data + '/crypt/fernet_keys',
            'vim_keys': data + '/vim/fernet_keys',
            # tacker-server's: it runs on conductor 1's host, and
            # Tacker's v2 API reads the package conductor 1 unpacked there
            # (creating a v2 instance reads its VNFD); each conductor
            # names its own in conductor-K.conf (tacker_conductors).
            'packages': data + '/conductor-1/vnfpackages',
            'csar_files': data + '/csar_files',
            'terraform': data + '/terraform',
            'package_cache': data + '/vnf_package_cache',
            # Our driver's per-instance state: a [k8s_mgmt] state_dir
            # per conductor below it (tacker_conductors).
            'driver_state': data + '/k8s-mgmt',
            'locks': layout.tacker_etc + '/locks'}


def tacker_conf(layout, ports, secrets):
    """tacker.conf of tacker-server and tacker-conductor: every path
    under the state directory, our two management drivers enabled. An
    OpenStack VIM's password is encrypted with a fernet key kept in a
    file; a Kubernetes VIM's credentials with a key kept in Barbican,
    which Tacker finds in Keystone's catalog (Tacker 16 refuses a
    Kubernetes VIM otherwise)."""
    auth_url = keystone_url(ports)
    return textwrap.dedent("""\
        [DEFAULT]
        use_stderr = true
        bind_host = {host}
        bind_port = {tacker}
        api_workers = 1
        graceful_shutdown_timeout = 5
        auth_strategy = keystone
        api_paste_config = {etc}/api-paste.ini
        state_path = {data}
        crypt_key_dir = {crypt_keys}
        transport_url = rabbit://openstack:{rabbit}@{host}:{rabbit_port}/
        default_log_levels = {log_levels}

        [database]
        connection = mysql+pymysql://tacker:{db}@{host}:{mariadb}/tacker

        {authtoken}

        [tacker]
        vnflcm_mgmt_driver = {drivers}

        [vim_keys]
        use_barbican = false
        openstack = {vim_keys}

        [k8s_vim]
        use_barbican = true

        [openstack_vim]
        # Tacker sleeps between its reads of a stack's status; the lab's
        # stacks are done in seconds. The same 10-minute timeout.
        stack_retry_wait = {stack_wait}
        stack_retries = {stack_retries}

        [key_manager]
        # No barbican_endpoint: Tacker's Barbican client, logged in as
        # [keystone_authtoken]'s user, takes the catalog's key-manager
        # service named barbican, internal interface.
        api_class = {key_manager}

        [k8s_mgmt]
        # One key for every conductor, as each conductor host has a copy;
        # each conductor's state_dir is in its conductor-K.conf.
        state_key_file = {state_key}
        # The lab's VMs reach no Internet: the CNI manifest in their image.
        cni_manifest = {cni_manifest}

        [vnf_package]
        vnf_package_csar_path = {packages}

        [glance_store]
        stores = file
        default_store = file
        filesystem_store_datadir = {csar_files}

        [v2_vnfm]
        tf_file_dir = {terraform}

        [v2_nfvo]
        vnf_package_cache_dir = {package_cache}

        [oslo_concurrency]
        lock_path = {locks}
        """).format(host=HOST, tacker=ports['tacker'], etc=layout.tacker_etc,
                    data=layout.tacker_data, rabbit=secrets['rabbitmq'],
                    rabbit_port=ports['rabbitmq'], db=secrets['tacker_db'],
                    mariadb=ports['mariadb'], auth_url=auth_url,
                    authtoken=_authtoken(ports, 'tacker', secrets['tacker']),
                    drivers=','.join(TACKER_MGMT_DRIVERS),
                    log_levels=','.join(TACKER_LOG_LEVELS),
                    key_manager=TACKER_KEY_MANAGER,
                    stack_wait=TACKER_STACK_WAIT,
                    stack_retries=TACKER_STACK_TIMEOUT // TACKER_STACK_WAIT,
                    cni_manifest=layer.CNI_MANIFEST,
                    state_key=state_key_file(layout),
                    **tacker_dirs(layout))


def state_key_file(layout):
    """The key that seals the driver's shared state (k8s_mgmt.state_key),
    made once by the plane before any conductor starts."""
    return os.path.join(layout.tacker_etc, 'k8s-mgmt-state.key')


def barbican_conf(layout, ports, secrets):
    """barbican.conf: the API only (no worker, no keystone listener: a
    secret stored with simple_crypto is written by the API's request
    itself), its schema made by barbican-manage (never at start), the
    project keys wrapped by the plane's KEK, tokens checked by
    keystonemiddleware as user barbican."""
    return textwrap.dedent("""\
        [DEFAULT]
        use_stderr = true
        log_dir =
        host_href = {url}
        db_auto_create = false
        default_log_levels = {log_levels}

        [database]
        connection = mysql+pymysql://barbican:{db}@{host}:{mariadb}/barbican

        [queue]
        enable = false

        [secretstore]
        enabled_secretstore_plugins = store_crypto

        [crypto]
        enabled_crypto_plugins = simple_crypto

        [simple_crypto_plugin]
        kek = {kek}

        {authtoken}
        """).format(url=barbican_url(ports).rstrip('/'),
                    log_levels=','.join(BARBICAN_LOG_LEVELS),
                    db=secrets['barbican_db'], host=HOST,
                    mariadb=ports['mariadb'], kek=secrets['barbican_kek'],
                    authtoken=_authtoken(ports, 'barbican',
                                         secrets['barbican']))


def barbican_gunicorn(layout, ports):
    """barbican-api's gunicorn.conf.py: Barbican's own paste pipeline
    (keystonemiddleware before /v1), loaded from the state directory,
    as Barbican's WSGI module would read it from /etc/barbican only."""
    paste = layout.barbican_etc + '/barbican-api-paste.ini'
    return "paste = '%s'\n" % paste + _gunicorn_serving(
        paste, ports['barbican'])


# Seconds between Tacker's reads of a stack's status, and how long it
# waits for a stack in all (Tacker's defaults: 10 and 60 x 10).
TACKER_STACK_WAIT = 2
TACKER_STACK_TIMEOUT = 600

# What tacker.conf's [key_manager] api_class names: Tacker's default,
# written out.
TACKER_KEY_MANAGER = 'tacker.keymgr.barbican_key_manager.BarbicanKeyManager'

# Barbican's quiet libraries.
BARBICAN_LOG_LEVELS = ('amqp=WARN', 'sqlalchemy=WARN',
                       'urllib3.connectionpool=WARN',
                       'keystonemiddleware=WARN', 'keystoneauth=WARN',
                       'stevedore=WARN', 'alembic=WARN')


def _authtoken(ports, user, password):
    """The [keystone_authtoken] section of a service that validates
    tokens as ``user`` of the service project."""
    return textwrap.dedent("""\
        [keystone_authtoken]
        www_authenticate_uri = {auth_url}
        auth_url = {auth_url}
        auth_type = password
        project_domain_name = Default
        user_domain_name = Default
        project_name = service
        username = {user}
        password = {password}""").format(auth_url=keystone_url(ports),
                                         user=user, password=password)


def keystone_url(ports):
    return 'http://%s:%d/v3' % (HOST, ports['keystone'])


def heat_url(ports):
    return 'http://%s:%d/v1/%%(tenant_id)s' % (HOST, ports['heat_api'])


def tacker_url(ports):
    return 'http://%s:%d/' % (HOST, ports['tacker'])


def barbican_url(ports):
    """barbican-api's root, as the catalog names it: clients find v1
    there by version discovery."""
    return 'http://%s:%d/' % (HOST, ports['barbican'])


def admin_env(ports, password=None):
    """The control plane's admin as OS_* variables, the password only
    when one is given: what the openrc exports and what the client runs
    with."""
    env = {'OS_AUTH_URL': keystone_url(ports),
           'OS_IDENTITY_API_VERSION': '3',
           'OS_REGION_NAME': 'RegionOne',
           'OS_PROJECT_NAME': 'admin',
           'OS_PROJECT_DOMAIN_NAME': 'Default',
           'OS_USERNAME': 'admin',
           'OS_USER_DOMAIN_NAME': 'Default'}
    if password is not None:
        env['OS_PASSWORD'] = password
    return env


def openrc(ports, password=None):
    """An openrc for the control plane's admin; the password line only
    when one is given (the file written 0600 has it, printed text not)."""
    lines = ['export %s=%s' % item for item in admin_env(ports).items()]
    if password is not None:
        lines.append("export OS_PASSWORD='%s'" % password)
    return '\n'.join(lines) + '\n'
