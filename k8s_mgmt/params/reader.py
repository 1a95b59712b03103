"""Reading JSON objects field by field into checked values.

:class:`SectionReader` is the generic part of validation: it looks fields up
in either casing, runs each field's checker, warns about unknown keys,
reports missing required fields and the password/private-key choice. The
cluster-specific rules live in :mod:`k8s_mgmt.params.validate`.
"""

from k8s_mgmt.params import casing
from k8s_mgmt.params import fields
from k8s_mgmt.params.fields import key_for_path


def child(path, key):
    if not path:
        return key
    return '%s.%s' % (path, key)


class Section(object):
    """The checked values of one JSON object, and which keys were given."""

    def __init__(self, path, values, present):
        self.path = path
        self.values = values      # field -> normalised value (valid only)
        self.present = present    # fields given with a non-null value

    def get(self, name, default=None):
        return self.values.get(name, default)


class SectionReader(object):

    def __init__(self, report):
        self.report = report

    def lookup(self, path, raw, name):
        """``(found, value)`` for a field in either casing; null = absent."""
        found, value, conflict = casing.pick(raw, name)
        if conflict:
            self.report.problem(child(path, name),
                                'given twice, as %r and %r, with different '
                                'values' % casing.spellings(name))
        return found and value is not None, value

    def warn_unknown(self, path, raw, known, ignored=()):
        for key in casing.unknown_keys(raw, known, ignored):
            where = child(path, key_for_path(key))
            self.report.unknown_keys.append(where)
            self.report.warn(where, 'unknown parameter, ignored')

    def section(self, path, raw, spec, extra_known=()):
        """Check the fields of the object ``raw`` against ``spec``.

        ``spec`` maps each snake_case field to its checker. Returns a
        :class:`Section`, or ``None`` (after a problem) when ``raw`` is not
        an object.
        """
        if not isinstance(raw, dict):
            self.report.problem(path, 'expected an object, got %s'
                                % fields.describe(raw))
            return None
        self.warn_unknown(path, raw, list(spec) + list(extra_known))
        values, present = {}, set()
        for name, check in spec.items():
            found, value = self.lookup(path, raw, name)
            if not found:
                continue
            present.add(name)
            checked = check(self.report, child(path, name), value)
            if checked is not None:
                values[name] = checked
        return Section(path, values, present)

    def section_list(self, path, raw, spec, minimum=0):
        """A list of objects, each checked with ``spec``."""
        if not isinstance(raw, list):
            self.report.problem(path, 'expected a list, got %s'
                                % fields.describe(raw))
            return []
        if len(raw) < minimum:
            self.report.problem(path, 'needs at least %d item(s)' % minimum)
        items = []
        for index, item in enumerate(raw):
            section = self.section('%s[%d]' % (path, index), item, spec)
            if section is not None:
                items.append(section)
        return items

    def require(self, section, names, why=''):
        """Report each of ``names`` that ``section`` lacks; True if none."""
        missing = [name for name in names if name not in section.present]
        for name in missing:
            self.report.problem(child(section.path, name), 'required%s' % why)
        return not missing

    def credentials(self, section, password_field='password', needed=True):
        """Exactly one of the password and ``ssh_private_key`` is needed."""
        has_password = password_field in section.present
        has_key = 'ssh_private_key' in section.present
        if has_password and has_key:
            self.report.problem(child(section.path, password_field),
                                'give %s or ssh_private_key, not both'
                                % password_field)
        elif needed and not (has_password or has_key):
            self.report.problem(child(section.path, password_field),
                                'required (or ssh_private_key instead)')
