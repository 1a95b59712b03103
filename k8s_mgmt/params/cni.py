"""``k8s_cluster_installation_param.cni``: a pinned preset, or the
operator's own manifest, and Multus beside either.

    "cni": {"preset": "calico", "multus": true,
            "mirror": "https://mirror.example.com/github-raw/"}
    "cni": {"manifest": "Files/kubernetes/cni.yaml"}
    "cni": {"manifest": "https://.../cni.yaml", "sha256": "<64 hex>"}

Without ``cni`` the conductor's ``[k8s_mgmt] cni_manifest`` applies, as
before.
"""

from k8s_mgmt import cni_presets
from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params.reader import child


def _name(report, path, value):
    value = fields.string(report, path, value, what='a preset name',
                          limit=32)
    if value is None:
        return None
    if value in cni_presets.PRESETS:
        return value
    why = cni_presets.NOT_PRESETS.get(value.strip().lower())
    report.problem(path, '%s is no preset%s; the presets are %s' % (
        fields.show(value), ': ' + why if why else '',
        ', '.join(sorted(cni_presets.PRESETS))))
    return None


def _manifest(report, path, value, package_path):
    """('url', URL) or ('path', package path), or None."""
    value = fields.string(report, path, value, what='a URL or path string',
                          limit=fields.MAX_PACKAGE_PATH)
    if value is None:
        return None
    if value.startswith(('http://', 'https://')):
        url = fields.repository_url(report, path, value)
        return url and ('url', url)
    if '://' in value:
        report.problem(path, 'only http:// and https:// URLs are fetched; '
                       'else give a file of the VNF package: %s'
                       % fields.show(value))
        return None
    found = package_path(report, path, value)
    return found and ('path', found)


def check(reader, raw, package_path, pod_cidr):
    """The CniChoice of ``raw`` (the ``cni`` object), or None after a
    problem; ``reader``: the validator (its report and section helpers);
    ``pod_cidr``: the cluster's pod network as it will be."""
    path = child('k8s_cluster_installation_param', 'cni')
    spec = {'preset': _name,
            'manifest': lambda report, where, value: _manifest(
                report, where, value, package_path),
            'sha256': fields.sha256, 'mirror': fields.repository_url,
            'multus': fields.boolean}
    section = reader.section(path, raw, spec)
    if section is None or set(section.values) != section.present:
        return None
    report = reader.report
    given = section.present
    if ('preset' in given) == ('manifest' in given):
        report.problem(path, 'give preset (%s) or manifest, one of them'
                       % ', '.join(sorted(cni_presets.PRESETS)))
        return None
    manifest = section.get('manifest') or (None, None)
    if manifest[0] == 'url' and 'sha256' not in given:
        report.problem(child(path, 'sha256'), 'required with a manifest '
                       'URL: the file is checked before it is applied')
        return None
    if 'sha256' in given and manifest[0] != 'url':
        report.problem(child(path, 'sha256'), 'only for a manifest URL (a '
                       'preset has its own; a file of the package is '
                       'checked with the package)')
        return None
    multus = section.get('multus', False)
    if 'mirror' in given and 'preset' not in given and not multus:
        report.problem(child(path, 'mirror'), 'serves the pinned manifests '
                       'of a preset and Multus; neither is asked for')
        return None
    preset = section.get('preset')
    if preset is not None:
        problem = cni_presets.pod_cidr_problem(
            cni_presets.PRESETS[preset], pod_cidr)
        if problem:
            report.problem(child(child('k8s_cluster_installation_param',
                                       'master_node'), 'pod_cidr'), problem)
            return None
    mirror = section.get('mirror')
    if mirror and not mirror.endswith('/'):
        mirror += '/'
    return model.CniChoice(
        preset=preset,
        manifest=manifest[1],
        sha256=section.get('sha256'), mirror=mirror, multus=multus)
