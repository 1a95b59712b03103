"""Node hostnames: unique, stable DNS-1123 labels made from server ids.

Not from the IP address: the last-octet names of Tacker's sample management
driver collide (10.10.0.31 and 10.10.1.31).
"""

import re

_NAME_PREFIX_LEN = 8
_MAX_LABEL = 63


def _label_chars(server_id):
    return re.sub(r'[^a-z0-9]', '', (server_id or '').lower())


def assign_names(fields_in_order):
    """'<role>-<first 8 chars of server id>', longer for later collisions.

    Earlier nodes keep their short name, so adding a node never renames an
    existing one. (32 bits of the id make a collision about one in a million
    for a 100-node cluster; only then can removing a node rename another.)
    """
    taken = set()
    for fields in fields_in_order:
        chars = _label_chars(fields['server_id']) or 'node'
        prefix = fields['role'] + '-'
        length = _NAME_PREFIX_LEN
        name = prefix + chars[:length]
        while name in taken and length < len(chars):
            length += 1
            name = prefix + chars[:length]
        serial = 2
        while name in taken:
            name = '%s-%d' % (prefix + chars[:length], serial)
            serial += 1
        fields['name'] = name[:_MAX_LABEL].rstrip('-')
        taken.add(fields['name'])
