"""The v2 management-script protocol: one hook per process.

Tacker's v2 conductor starts ``python <script>`` under its own interpreter
for each hook, writes ``pickle.dumps(script_dict)`` to its stdin and, when
the process ends:

* whatever the exit status: reads stdout as one pickled dict (a
  ``vnf_instance`` in it replaces the instance's attributes;
  ``user_script_err_handling_data`` is kept with the operation, and shown
  with its error); anything else on stdout spoils the pickle and the
  result is silently dropped;
* any other status: the operation fails (FAILED_TEMP while processing) and
  the whole of stderr becomes the operation's ``error.detail``, which every
  API reader sees.

So this module keeps stdout for the pickle alone (whatever a library
prints during the hook goes to the log file instead), writes nothing to
stderr but one line on failure (node, step and cause; secrets masked; no
traceback), logs through the ``k8s_mgmt`` loggers to a file of its own,
and ends the process with ``os._exit`` so that no thread left behind can
keep the conductor waiting (it gives the script no timeout).
"""

import contextlib
import logging
import os
import pickle
import sys

from k8s_mgmt import exceptions
from k8s_mgmt import secrets

LOG = logging.getLogger(__name__)

# Where the log goes: $K8S_MGMT_V2_LOG, else this file in the first of
# LOG_DIRS that this process may write (Tacker's own log directory first).
LOG_ENV = 'K8S_MGMT_V2_LOG'
LOG_NAME = 'k8s-mgmt-v2.log'
LOG_DIRS = ('/var/log/tacker', os.path.expanduser('~'))
LOG_FORMAT = ('%(asctime)s %(process)d %(levelname)s %(name)s '
              '%(message)s')
# The keys of the pickled dict the conductor sends that every hook needs.
REQUIRED_KEYS = ('operation', 'vnf_instance', 'request')


class ScriptInputError(exceptions.MgmtDriverError):
    """What the conductor sent is not what a v2 hook receives."""

    message = '%(reason)s'


def log_path(environ=None):
    """The log file of this hook's process."""
    environ = os.environ if environ is None else environ
    if environ.get(LOG_ENV):
        return environ[LOG_ENV]
    for directory in LOG_DIRS:
        if os.path.isdir(directory) and os.access(directory, os.W_OK):
            return os.path.join(directory, LOG_NAME)
    return os.path.join(LOG_DIRS[-1], LOG_NAME)


class RedactingFormatter(logging.Formatter):
    """Every line as logging formats it, the values of live Secrets (and
    what looks like a token) masked, tracebacks included."""

    def format(self, record):
        return secrets.redact(super().format(record))


def start_logging(path):
    """The ``k8s_mgmt`` loggers (and the root's) to ``path``, mode 0600;
    nothing to stderr."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    handler = logging.StreamHandler(os.fdopen(fd, 'a', buffering=1))
    handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler.stream


# The options of the conductor's command line that name its configuration.
CONFIG_OPTIONS = ('--config-file', '--config-dir')
# The conductor's configuration files, os.pathsep-separated, when the
# operator names them (else they are read from the conductor's processes).
CONFIG_ENV = 'K8S_MGMT_CONFIG_FILES'
# How far up from this script to look for the conductor's command line:
# its parent is a cotyledon worker, whose title replaced its arguments;
# the worker's parent, cotyledon's master, shows them in its title.
ANCESTORS = 3


def _parent_of(pid):
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return int(handle.read().rsplit(')', 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _words(pid):
    """The command line of ``pid`` as words: NUL-separated arguments, or
    a title a process set in their place (``name: master process [argv
    joined]``) split on blanks. None when unreadable."""
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            raw = handle.read()
    except OSError:
        return None
    text = raw.rstrip(b'\0').decode('utf-8', 'surrogateescape')
    if '\0' in text:
        return [word for word in text.split('\0') if word]
    return [word.strip('[]') for word in text.split()]


def config_args_of(pid):
    """``--config-file``/``--config-dir`` arguments on the command line of
    ``pid``, relative paths made absolute from its working directory."""
    words = _words(pid)
    try:
        cwd = os.readlink('/proc/%d/cwd' % pid)
    except OSError:
        return []
    found = []
    for index, word in enumerate(words or ()):
        option, sep, value = word.partition('=')
        if option not in CONFIG_OPTIONS:
            continue
        if not sep:
            if index + 1 >= len(words):
                continue
            value = words[index + 1]
        found += [option, os.path.join(cwd, value)]
    return found


def conductor_config_args(pid=None, environ=None):
    """The configuration the v1 driver would read inside the conductor,
    as oslo.config arguments: $K8S_MGMT_CONFIG_FILES when set, else the
    ``--config-file``/``--config-dir`` arguments of the nearest process
    up from this one that has any (Tacker's v2 conductor runs this script
    directly, no shell between). [] when there is none: oslo.config then
    searches Tacker's default places (/etc/tacker/tacker.conf, ...)."""
    environ = os.environ if environ is None else environ
    if environ.get(CONFIG_ENV):
        args = []
        for path in environ[CONFIG_ENV].split(os.pathsep):
            if path:
                args += ['--config-file', path]
        return args
    pid = os.getppid() if pid is None else pid
    for _ in range(ANCESTORS):
        if not pid or pid <= 1:
            break
        found = config_args_of(pid)
        if found:
            return found
        pid = _parent_of(pid)
    return []


def load_config(args):
    """The conductor's configuration into oslo.config's CONF, where
    :mod:`k8s_mgmt.conf` registered the driver's options: the files of
    ``args``, else Tacker's default places."""
    from oslo_config import cfg
    from k8s_mgmt import conf  # noqa: F401 registers [k8s_mgmt]
    if args:
        cfg.CONF(args=list(args), project='tacker', default_config_files=[],
                 default_config_dirs=[])
    else:
        cfg.CONF(args=[], project='tacker')
    files = list(cfg.CONF.config_file or ())
    if files:
        LOG.info('configuration: %s', ', '.join(files))
    else:
        LOG.warning('no configuration file found (set $%s to the '
                    'conductor\'s): the driver\'s defaults apply',
                    CONFIG_ENV)


def read_input(stream):
    """The conductor's pickled dict, checked for the keys every hook
    needs. ScriptInputError (one line) otherwise."""
    data = stream.read()
    if not data:
        raise ScriptInputError(reason='no input on stdin: this script is '
                               'run by Tacker\'s v2 conductor, which sends '
                               'the hook\'s data as a pickled dict')
    try:
        # The conductor of this host wrote it: the same trust as the
        # conductor's own code, which runs this script.
        script_dict = pickle.loads(data)
    except Exception as err:
        raise ScriptInputError(reason='stdin is not a pickled dict (%s)'
                               % type(err).__name__)
    if not isinstance(script_dict, dict):
        raise ScriptInputError(reason='stdin holds a %s, not the dict '
                               'Tacker\'s v2 conductor sends'
                               % type(script_dict).__name__)
    missing = [key for key in REQUIRED_KEYS if key not in script_dict]
    if missing:
        raise ScriptInputError(reason='the conductor\'s data lacks %s'
                               % ', '.join(missing))
    return script_dict


def run_hook(script_dict, hooks):
    """The result dict of ``hooks[operation](script_dict)`` (a hook that
    returns None returns nothing to Tacker)."""
    operation = script_dict['operation']
    hook = hooks.get(operation) if isinstance(operation, str) else None
    if hook is None:
        raise ScriptInputError(reason='%.60r is no v2 hook this script '
                               'knows (known: %s)'
                               % (operation, ', '.join(sorted(hooks))))
    result = hook(script_dict)
    if result is not None and not isinstance(result, dict):
        raise TypeError('hook %s returned a %s, not a dict'
                        % (operation, type(result).__name__))
    return result or {}


def failure_line(err):
    """The one stderr line for ``err``: Tacker copies stderr verbatim into
    the API-visible error, so no secret, no traceback, one line."""
    if isinstance(err, exceptions.MgmtDriverError):
        text = exceptions.one_line(err)
    else:
        text = '%s: %s (the k8s-mgmt log has the traceback)' % (
            type(err).__name__, err)
    return ' '.join(secrets.redact(text).split())


def error_data(err):
    """The failure's ``user_script_err_handling_data`` (Tacker's v2
    conductor reads the pickle before the exit status and shows it with
    the operation's error): the error's own data, secrets masked, or
    None."""
    if not isinstance(err, exceptions.MgmtDriverError):
        return None
    data = err.handling_data()
    return _redacted(data) if data else None


def _redacted(value):
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, str):
        return secrets.redact(value)
    return value


@contextlib.contextmanager
def stdout_to(stream):
    """File descriptor 1 (and sys.stdout) on ``stream`` for the duration;
    yields a binary file on the original stdout, kept for the pickle."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(stream.fileno(), 1)
    previous = sys.stdout
    sys.stdout = stream
    try:
        yield os.fdopen(os.dup(saved), 'wb')
    finally:
        sys.stdout = previous
        os.dup2(saved, 1)
        os.close(saved)


def main(hooks, stdin=None, stderr=None, environ=None):
    """Run one hook as Tacker's v2 conductor asks; the exit status (0 or
    1). ``hooks`` maps hook names to ``hook(script_dict) -> dict|None``."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stderr = stderr if stderr is not None else sys.stderr
    try:
        log = start_logging(log_path(environ))
    except OSError as err:
        stderr.write('k8s-mgmt: cannot open its log file: %s\n'
                     % err.strerror)
        return 1
    try:
        with stdout_to(log) as result_stream:
            try:
                load_config(conductor_config_args())
                script_dict = read_input(stdin)
                LOG.info('v2 hook %s for VNF instance %s',
                         script_dict['operation'],
                         (script_dict['vnf_instance'] or {}).get('id'))
                result = run_hook(script_dict, hooks)
            except Exception as err:
                LOG.exception('v2 hook failed')
                stderr.write(failure_line(err) + '\n')
                stderr.flush()
                # Read by the conductor even when the hook fails.
                data = error_data(err)
                with result_stream:
                    if data:
                        result_stream.write(pickle.dumps(
                            {'user_script_err_handling_data': data}))
                return 1
            with result_stream:
                result_stream.write(pickle.dumps(result))
        return 0
    finally:
        logging.shutdown()


def exit_with(status):
    """End the process now: a thread a hook left behind must not keep the
    conductor (which waits for this process without a timeout)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
