"""The LCM operations a tacker-conductor ran, read from its log: our
driver's phase lines (k8s_mgmt.engine.phase_log) carry the label of the
hook call, ``[instantiate <vnf instance id>] ==> <phase title>``, and each
hook call ends with ``[<label>] finished in N s: ...``.

    operations(log_text) -> [{'hook': 'instantiate',
                              'vnf_instance_id': '44ed...'}, ...]
"""

import re

# "2026-11-27 08:46:11.765 12599 INFO k8s_mgmt.engine.phase_log
#  [None req-af3e... - - - -] [instantiate 44ed1fa8-...] ==> Read ..."
_PHASE = re.compile(
    r'^\S+ \S+ \d+ [A-Z]+ k8s_mgmt[\w.]* (?:\[[^\]]*\] )?'
    r'\[(?P<hook>\w+) (?P<vnf_instance_id>[^\]\s]+)\] '
    r'(?P<what>==> |finished in )')


def operations(text):
    """One {"hook", "vnf_instance_id"} per hook call, in log order. A call
    starts with its label's first ``==>`` line and ends with its summary,
    so two calls with the same label count twice and calls on other
    instances may interleave."""
    found, running = [], set()
    for line in text.splitlines():
        match = _PHASE.match(line)
        if not match:
            continue
        label = (match['hook'], match['vnf_instance_id'])
        if match['what'] == 'finished in ':
            running.discard(label)
        elif label not in running:
            running.add(label)
            found.append({'hook': label[0], 'vnf_instance_id': label[1]})
    return found


def read_operations(log_path):
    """:func:`operations` of the log at ``log_path`` ([] without one)."""
    try:
        with open(log_path, 'rb') as handle:
            text = handle.read().decode('utf-8', 'replace')
    except OSError:
        return []
    return operations(text)
