"""A small fake of Tacker's v1 API on 127.0.0.1 for the tacker_api tests
(it holds no test itself).

It answers as Tacker 16 does where the client cares: 201 and the
resource on create, 202 with a ``Location`` on Tacker's configured
endpoint (not the address called) when an LCM operation starts, 202 and
no ``Location`` on a retry, ProblemDetails on a refusal, Keystone's
middleware 401 without the static token. Onboarding and operation
occurrences move one scripted state per read, so a test sets the path
each takes (``onboarding``, ``outcome``, ``after_retry``,
``after_rollback``). A path in ``hold`` is answered only once ``release``
is set (or after 5 s), to make the client time out; the next ``drop[path]``
requests of a path get their connection closed with no answer.
"""

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from urllib import parse

TOKEN = 'static-test-token'
# An operation's error as Tacker 16 stores a driver's failure: the text of
# the exception, here a traceback's (what our one-line errors avoid).
DRIVER_ERROR = {
    'status': 500,
    'detail': 'Traceback (most recent call last):\n  File "d.py", line 3\n'
              'k8s_mgmt.exceptions.NodesFailed: worker-2: join: kubeadm '
              'join exited 1\n'}
# Tacker's [vnf_lcm] endpoint_url default: what its Location headers name.
CONFIGURED_ENDPOINT = 'http://localhost:9890/'


class FakeTacker(object):

    def __init__(self):
        self.packages, self.instances, self.occurrences = {}, {}, {}
        self.requests = []              # (method, path, query, headers, body)
        self.api = 'vnflcm/v1'          # the LCM API last called
        self.onboarding = ['PROCESSING', 'ONBOARDED']
        self.outcome = ['STARTING', 'PROCESSING', 'COMPLETED']
        self.error = None               # the occurrence's error on failure
        self.after_retry = ['FAILED_TEMP', 'PROCESSING', 'COMPLETED']
        self.after_rollback = ['FAILED_TEMP', 'ROLLING_BACK', 'ROLLED_BACK']
        self.lose_content = 0           # packages whose content is lost
        self.refuse_content = 0         # uploads set back to CREATED
        self.on_refuse = None           # called with the refused package
        self.stall_content = 0          # uploads left PROCESSING for good
        # Reads of a PATCH's occurrence answered 404 first (Tacker 16's v1
        # conductor records it after the API answered 202).
        self.unrecorded_reads = 0
        self.unreadable_once = False    # the last of those a 500 instead
        self.on_stall = None            # called with the stalled package
        self.hold = set()
        self.lcm_location = True        # False: a 202 without Location
        self.drop = {}                  # path: connections closed unanswered
        self.release = threading.Event()
        self._ticks = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={'poll_interval': 0.02},
                                       daemon=True)

    @property
    def url(self):
        return 'http://127.0.0.1:%d/' % self.httpd.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def calls(self, method=None):
        return [(m, p) for m, p, _, _, _ in self.requests
                if method is None or m == method]

    # -- the HTTP side ---------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'
            # Headers and body go in two writes: no wait for an ACK.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def _any(self):
                fake._serve(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        return Handler

    def _serve(self, handler):
        split = parse.urlsplit(handler.path)
        length = int(handler.headers.get('Content-Length') or 0)
        body = handler.rfile.read(length) if length else b''
        with self.lock:
            self.requests.append((handler.command, split.path,
                                  dict(parse.parse_qsl(split.query)),
                                  dict(handler.headers), body))
        if split.path in self.hold:
            self.release.wait(5)
        with self.lock:
            dropped = self.drop.get(split.path, 0)
            self.drop[split.path] = max(dropped - 1, 0)
        if dropped:
            handler.close_connection = True
            return
        if handler.headers.get('X-Auth-Token') != TOKEN:
            return _send(handler, 401, {'error': {
                'code': 401, 'title': 'Unauthorized',
                'message': 'The request you have made requires '
                           'authentication.'}})
        parts = split.path.strip('/').split('/')
        with self.lock:
            status, answer, headers = self._route(
                handler.command, parts, handler.headers, body)
        _send(handler, status, answer, headers)

    def _route(self, method, parts, headers, body):
        api, rest = '/'.join(parts[:2]), parts[2:]
        if api == 'vnfpkgm/v1' and rest[:1] == ['vnf_packages']:
            return self._packages(method, rest[1:], headers, body)
        if api == 'vnflcm/v2' and headers.get('Version') != '2.0.0':
            # Tacker's v2 API takes only requests naming their version.
            return _problem(400, 'Bad Request', '\'Version\' HTTP header '
                            'missing.')
        if api in ('vnflcm/v1', 'vnflcm/v2'):
            self.api = api
        if api in ('vnflcm/v1', 'vnflcm/v2') and rest[:1] == [
                'vnf_instances']:
            return self._instances(method, rest[1:], body)
        if api in ('vnflcm/v1', 'vnflcm/v2') and rest[:1] == [
                'vnf_lcm_op_occs']:
            return self._occurrences(method, rest[1:])
        return _problem(404, 'Not Found', 'The resource could not be found.')

    # -- VNF packages ----------------------------------------------------
    def _packages(self, method, rest, headers, body):
        if not rest:
            if method == 'GET':
                return 200, [_public(p) for p in self.packages.values()], ()
            package = {'id': str(uuid.uuid4()), 'onboardingState': 'CREATED',
                       'operationalState': 'DISABLED',
                       'usageState': 'NOT_IN_USE',
                       'userDefinedData': json.loads(body)[
                           'userDefinedData']}
            package['_script'] = []
            self.packages[package['id']] = package
            return 201, _public(package), [
                ('Location', '/vnfpkgm/v1/vnf_packages/' + package['id'])]
        package = self.packages.get(rest[0])
        if package is None:
            return _problem(404, 'Not Found', 'Can not find requested vnf '
                                              'package: %s' % rest[0])
        if rest[1:] == ['package_content'] and method == 'PUT':
            if package['onboardingState'] != 'CREATED':
                return _problem(409, 'Conflict', 'VNF Package %s onboarding '
                                'state is not CREATED' % package['id'])
            package['onboardingState'] = 'UPLOADING'
            package['_script'] = list(self.onboarding)
            if self.refuse_content:
                # Tacker 16's conductor reverting the upload: CREATED.
                self.refuse_content -= 1
                package['_script'] = ['PROCESSING', 'CREATED']
                if self.on_refuse:
                    self.on_refuse(package)
            elif self.stall_content:
                # Tacker 16's download counter left above zero.
                self.stall_content -= 1
                package['_script'] = ['PROCESSING']
                if self.on_stall:
                    self.on_stall(package)
            package['_content'] = (headers.get('Content-Type'), body)
            return 202, None, ()
        if rest[1:] == ['package_content'] and method == 'GET':
            # Tacker 16 after its onboarding race between conductors.
            if self.lose_content:
                self.lose_content -= 1
                return _problem(500, 'Internal Server Error',
                                'Unexpected API Error.')
            return 200, {'zip': True}, ()
        if method == 'GET':
            _advance(package, 'onboardingState')
            if package['onboardingState'] == 'ONBOARDED':
                package['operationalState'] = 'ENABLED'
                package.setdefault('vnfdId', str(uuid.uuid4()))
            return 200, _public(package), ()
        if method == 'PATCH':
            wanted = json.loads(body)['operationalState']
            if package['operationalState'] == wanted:
                return _problem(409, 'Conflict', 'VNF Package %s is already '
                                'in %s operational state'
                                % (package['id'], wanted))
            package['operationalState'] = wanted
            return 200, {'operationalState': wanted}, ()
        if (package['operationalState'] == 'ENABLED'
                or package['usageState'] == 'IN_USE'):
            return _problem(409, 'Conflict', "VNF Package %s cannot be "
                            "deleted as it's operational state is %s and "
                            "usage state is %s." % (
                                package['id'], package['operationalState'],
                                package['usageState']))
        del self.packages[package['id']]
        return 204, None, ()

    # -- VNF instances ---------------------------------------------------
    def _instances(self, method, rest, body):
        if not rest:
            if method == 'GET':
                return 200, list(self.instances.values()), ()
            request = json.loads(body)
            owner = [p for p in self.packages.values()
                     if p.get('vnfdId') == request['vnfdId']]
            if not owner:
                return _problem(404, 'Not Found', 'Can not find requested '
                                'to NFVO, vnf package info: vnfdId=[%s]'
                                % request['vnfdId'])
            owner[0]['usageState'] = 'IN_USE'
            instance = {'id': str(uuid.uuid4()),
                        'vnfdId': request['vnfdId'],
                        'vnfInstanceName': request.get('vnfInstanceName'),
                        'vnfInstanceDescription': request.get(
                            'vnfInstanceDescription'),
                        'metadata': request.get('metadata', {}),
                        'instantiationState': 'NOT_INSTANTIATED'}
            self.instances[instance['id']] = instance
            return 201, instance, [('Location', '%s%s/vnf_instances/%s'
                                    % (CONFIGURED_ENDPOINT, self.api,
                                       instance['id']))]
        instance = self.instances.get(rest[0])
        if instance is None:
            return _problem(404, 'Not Found', 'Can not find requested vnf '
                                              'instance: %s' % rest[0])
        if method == 'GET':
            return 200, instance, ()
        if method == 'DELETE':
            del self.instances[instance['id']]
            for package in self.packages.values():
                if package.get('vnfdId') == instance['vnfdId']:
                    package['usageState'] = 'NOT_IN_USE'
            return 204, None, ()
        if method == 'PATCH':
            # A change of the instance's information (a merge patch; its
            # metadata merged at once here).
            change = json.loads(body)
            instance.setdefault('metadata', {}).update(
                change.get('metadata') or {})
            rest = [rest[0], 'modify_info']
        occurrence = {'id': str(uuid.uuid4()), 'operation': rest[1].upper(),
                      'vnfInstanceId': instance['id'],
                      'operationParams': json.loads(body),
                      'operationState': 'STARTING', 'error': None,
                      '_script': list(self.outcome)}
        if rest[1] == 'modify_info':
            occurrence['_unrecorded'] = self.unrecorded_reads
        self._enter(occurrence, 'STARTING')
        self.occurrences[occurrence['id']] = occurrence
        if not self.lcm_location:
            return 202, None, ()
        return 202, None, [('Location', '%s%s/vnf_lcm_op_occs/%s'
                            % (CONFIGURED_ENDPOINT, self.api,
                               occurrence['id']))]

    # -- operation occurrences -------------------------------------------
    def _occurrences(self, method, rest):
        if not rest:
            return 200, [_public(o) for o in self.occurrences.values()], ()
        occurrence = self.occurrences.get(rest[0])
        if occurrence is not None and occurrence.get('_unrecorded'):
            occurrence['_unrecorded'] -= 1
            if occurrence['_unrecorded'] == 0 and self.unreadable_once:
                # Recorded, not yet rewritten as JSON by the driver.
                return _problem(500, 'Internal Server Error',
                                'Unexpected API Error. <class '
                                '\'json.decoder.JSONDecodeError\'>')
            occurrence = None
        if occurrence is None:
            return _problem(404, 'VnfLcmOpOcc NOT FOUND', 'VnfLcmOpOcc %s '
                            'could not be found.' % rest[0])
        if method == 'GET':
            before = occurrence['operationState']
            _advance(occurrence, 'operationState')
            if occurrence['operationState'] != before:
                self._enter(occurrence, occurrence['operationState'])
            return 200, _public(occurrence), ()
        if rest[1] == 'cancel':
            # Tacker 16: a PROCESSING occurrence older than [vnf_lcm]
            # operation_timeout becomes FAILED_TEMP at once.
            if occurrence['operationState'] != 'PROCESSING':
                return _problem(409, 'Conflict', 'Cancel operation in '
                                'state %s is not allowed'
                                % occurrence['operationState'])
            self._enter(occurrence, 'FAILED_TEMP')
            occurrence['operationState'] = 'FAILED_TEMP'
            occurrence['_script'] = []
            return 202, None, ()
        if occurrence['operationState'] != 'FAILED_TEMP':
            return _problem(409, 'Conflict', 'Cannot proceed with '
                            'operation_state %s'
                            % occurrence['operationState'])
        if rest[1] == 'retry':
            occurrence['_script'] = list(self.after_retry)
            return 202, None, ()
        if rest[1] == 'rollback':
            occurrence['_script'] = list(self.after_rollback)
            if self.api == 'vnflcm/v2':
                return 202, None, ()    # v2 names no occurrence
            return 202, None, [('Location', '%svnflcm/v1/vnf_lcm_op_occs/%s'
                                % (CONFIGURED_ENDPOINT, occurrence['id']))]
        self._enter(occurrence, 'FAILED')
        occurrence['operationState'] = 'FAILED'
        return 200, _public(occurrence), ()

    def _enter(self, occurrence, state):
        """A new state, entered at a new whole second."""
        self._ticks += 1
        occurrence['stateEnteredTime'] = '2026-11-27T05:%02d:%02d' % divmod(
            self._ticks, 60)
        if state in ('FAILED_TEMP', 'FAILED'):
            occurrence['error'] = self.error


def _advance(resource, key):
    if resource.get('_script'):
        resource[key] = resource['_script'].pop(0)


def _public(resource):
    return {k: v for k, v in resource.items() if not k.startswith('_')}


def _problem(status, title, detail):
    return status, {'title': title, 'status': status, 'detail': detail}, ()


def _send(handler, status, body, headers=()):
    data = b'' if body is None else json.dumps(body).encode()
    handler.send_response(status)
    if body is not None:
        handler.send_header('Content-Type', 'application/problem+json'
                            if status >= 400 else 'application/json')
    handler.send_header('Content-Length', str(len(data)))
    for key, value in headers:
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)
