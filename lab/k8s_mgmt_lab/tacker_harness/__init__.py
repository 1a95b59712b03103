"""Tacker's own v1 VNF LCM code instantiating the sample VNF on a lab.

``python -m k8s_mgmt_lab.tacker_harness instantiate --state-dir D`` on a
lab brought up with ``k8s-mgmt lab ... up --no-stack``, in a process of its
own (Tacker's imports break threaded servers sharing the process):

* :mod:`.config`: ``tacker.conf.CONF`` parsed with the lab's overrides
  (our MgmtDriver, the OpenStack infra driver, every path under
  ``D/tacker``) and an SQLite database made from Tacker's models;
* :mod:`.vim`: the lab's Keystone registered as the default OpenStack VIM
  through the NFVO plugin;
* :mod:`.package`: ``D/vnf_package.zip`` onboarded as the package API and
  the conductor's ``load_csar_data`` do it;
* :mod:`.lcm`: the instance created as the v1 VNF LCM controller creates
  it, then the controller's ``_instantiate``, whose RPC cast
  :mod:`.rpc_shim` delivers to ``Conductor.instantiate`` in this process;
* :mod:`.report`: instantiation and op occ states from Tacker's database.

What of Tacker is replaced, and why (nothing else is):

1. The message bus: oslo.messaging runs on its in-memory ``fake:/``
   transport (as in Tacker's own tests), and the LCM controller's
   ``rpc_api`` (``VNFLcmRPCAPI``) is :class:`.rpc_shim.InProcessRPC`,
   which calls the conductor's ``instantiate`` and ``send_notification``
   directly instead of casting over a broker that does not exist here.
   For the same reason the package upload's two casts
   (``upload_vnf_package_content`` and ``load_csar_data``) are replaced by
   their bodies' effect: the state set, then ``Conductor.load_csar_data``
   called directly.
2. Nothing else: the VIM is registered and read back through the NFVO
   plugin (the lab's Keystone answers it), the CSAR is stored through
   glance_store's file backend (a library, no Glance service), the
   coordination lock uses tooz's file backend, notifications find no
   subscription in the database and so send nothing, and the VNFD has no
   image artifact so no Glance image is uploaded.
"""
