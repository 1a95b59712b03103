"""Claims and the pods that mount them, made through the official
``kubernetes`` client on a lab's API (what a CNF using the storage would
create). ``core_api(kubeconfig)``: ``lab status`` copies the admin
kubeconfig to ``<state dir>/kubeconfig`` (``report['kubernetes']
['kubeconfig']``)."""

from k8s_mgmt.polling import Poll

PAUSE_IMAGE = 'registry.k8s.io/pause:3.10'


def core_api(kubeconfig):
    """CoreV1Api with the kubeconfig's server, CA and bearer token."""
    from kubernetes import client as kclient
    from kubernetes import config as kconfig
    return kclient.CoreV1Api(kconfig.new_client_from_config(
        config_file=kubeconfig))


def create_claim(core, name, namespace='default', storage='1Gi',
                 access_modes=('ReadWriteMany',), volume_name=None,
                 storage_class='', selector=None):
    """A PersistentVolumeClaim; ``storage_class`` '' asks for a volume
    without a class, as a PV manifest without storageClassName has."""
    spec = {'accessModes': list(access_modes),
            'storageClassName': storage_class,
            'resources': {'requests': {'storage': storage}}}
    if volume_name:
        spec['volumeName'] = volume_name
    if selector:
        spec['selector'] = selector
    return core.create_namespaced_persistent_volume_claim(namespace, {
        'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
        'metadata': {'name': name}, 'spec': spec})


def create_pod_using(core, name, claim, namespace='default', node=None,
                     mount_path='/data'):
    """A pod mounting ``claim`` (bound to ``node`` when given, as the
    scheduler would bind it)."""
    spec = {'containers': [{'name': 'app', 'image': PAUSE_IMAGE,
                            'volumeMounts': [{'name': 'data',
                                              'mountPath': mount_path}]}],
            'volumes': [{'name': 'data',
                         'persistentVolumeClaim': {'claimName': claim}}]}
    if node:
        spec['nodeName'] = node
    return core.create_namespaced_pod(namespace, {
        'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name},
        'spec': spec})


def claim_and_pod(core, claim, pod, namespace='default', **claim_args):
    """Create a claim and a pod mounting it; (claim, pod) as created."""
    made = create_claim(core, claim, namespace, **claim_args)
    return made, create_pod_using(core, pod, claim, namespace)


def wait_claim_phase(core, name, phase, namespace='default', seconds=30):
    """The claim once its status.phase is ``phase`` (backoff, deadline)."""
    last = None
    for _ in Poll(seconds, first=0.05, maximum=1.0):
        last = core.read_namespaced_persistent_volume_claim(name, namespace)
        if last.status.phase == phase:
            return last
    raise AssertionError('claim %s/%s is %s, not %s after %s s'
                         % (namespace, name, last and last.status.phase,
                            phase, seconds))
