"""Heat's stack list (``GET /stacks``) as the lab answers it: which stacks,
from the query parameters Heat takes.

Top-level stacks unless ``show_nested`` is true; each filter given keeps the
stacks whose field is one of its values (so ``owner_id`` finds nested stacks
only with ``show_nested``, as on Heat). Parameters Heat acts on that the lab
does not implement are refused rather than answered as if applied; others
Heat does not know are ignored, as Heat ignores them.
"""

# Filters and the stack field each one compares with.
FILTERS = {
    'id': lambda s: s['id'], 'name': lambda s: s['name'],
    'owner_id': lambda s: s['parent'],
    'action': lambda s: s['status'].partition('_')[0],
    'status': lambda s: s['status'].partition('_')[2]}

UNSUPPORTED = ('tags', 'tags_any', 'not_tags', 'not_tags_any', 'tenant',
               'username', 'show_deleted', 'show_hidden', 'global_tenant',
               'limit', 'marker', 'sort_keys', 'sort_dir')


class Unsupported(ValueError):
    """The query uses stack-list parameters the lab does not implement."""


def select(cloud, query):
    """The stacks of ``cloud`` a stack list with ``query`` (parsed query
    string: name -> list of values) returns; Unsupported names the
    parameters the lab cannot apply."""
    unknown = sorted(k for k in query if k in UNSUPPORTED)
    if unknown:
        raise Unsupported('the lab\'s stack list does not support %s'
                          % ', '.join(unknown))
    nested = (query.get('show_nested') or ['false'])[-1].lower() in (
        'true', '1', 'yes', 'on')
    stacks = cloud.all_stacks(nested=nested)
    for key, field in FILTERS.items():
        if key in query:
            wanted = set(query[key])
            stacks = [s for s in stacks if field(s) in wanted]
    return stacks
