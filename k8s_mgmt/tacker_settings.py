"""Tacker's own settings the driver must decide by, read as Tacker reads them.

Inside tacker-conductor, Tacker has registered its ``[vnf_lcm]`` options on
the global configuration, so an operator's ``tacker.conf`` is what counts
here too. Outside Tacker (``k8s-mgmt validate``, the lab without Tacker) the
options are not registered and Tacker's defaults apply; a functional test
checks that these defaults are still Tacker's.
"""

import dataclasses

from oslo_config import cfg

GROUP = 'vnf_lcm'
# Tacker's defaults (tacker/conf/vnf_lcm.py).
BLOCK_STORAGE_KEY = 'tacker_extension_heal_include_block_storage'
BLOCK_STORAGE_DEFAULT = True


@dataclasses.dataclass(frozen=True)
class HealBlockStorage(object):
    """How a v1 VNFC heal decides whether the VNFC's Cinder volumes are
    recreated: ``additionalParams[key]`` when the request has it (any
    truthy value recreates), else ``default``."""

    key: str = BLOCK_STORAGE_KEY
    default: bool = BLOCK_STORAGE_DEFAULT
    from_tacker: bool = False

    def origin(self):
        """Where ``default`` came from, for messages."""
        return ('[%s] heal_vnfc_block_storage = %s on this conductor'
                % (GROUP, str(self.default).lower()) if self.from_tacker
                else "Tacker's default [%s] heal_vnfc_block_storage = %s"
                % (GROUP, str(self.default).lower()))


def heal_block_storage(conf=None):
    """The heal's block-storage setting of the Tacker this driver runs in."""
    conf = cfg.CONF if conf is None else conf
    try:
        group = conf[GROUP]
        key = group['heal_include_block_storage_key']
        default = group['heal_vnfc_block_storage']
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, KeyError):
        return HealBlockStorage()
    return HealBlockStorage(key=key or BLOCK_STORAGE_KEY,
                            default=bool(default), from_tacker=True)
