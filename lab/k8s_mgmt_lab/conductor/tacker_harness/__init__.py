"""Tacker's own v1 VNF LCM code driving the sample VNF on a lab.

``python -m k8s_mgmt_lab.conductor.tacker_harness VERB --state-dir D`` (VERB:
``instantiate``, ``scale``, ``heal``, ``terminate``; ``k8s-mgmt lab VERB
--tacker`` runs it), in a process of its own (Tacker's imports break
threaded servers sharing the process):

* :mod:`.config`: ``tacker.conf.CONF`` parsed with the lab's overrides
  (our MgmtDriver, the OpenStack infra driver, every path under
  ``D/tacker``) and an SQLite database made from Tacker's models;
* :mod:`.state`: that database restored from ``D/tacker/tacker.sqlite``
  at the start of every run (and saved at its end, failed or not), and
  ``D/tacker/harness.json`` naming what the first instantiate set up;
* :mod:`.vim`: the lab's Keystone registered as the default OpenStack VIM
  through the NFVO plugin (first instantiate only);
* :mod:`.package`: ``D/vnf_package.zip`` onboarded as the package API and
  the conductor's ``load_csar_data`` do it (first instantiate only);
* :mod:`.lcm`: the instance created as the v1 VNF LCM controller creates
  it, then the controller's ``_instantiate``;
* :mod:`.ops`: the controller's ``_scale``, ``_heal`` and ``_terminate``
  (what ``POST /vnf_instances/{id}/scale``, ``/heal``, ``/terminate`` run
  after the policy check); every RPC cast they make is delivered by
  :mod:`.rpc_shim` to the conductor in this process;
* :mod:`.labrecord`: ``D/lab.json`` kept in step with Tacker (its stack,
  its VNFC ids, ``lcm: tacker``); a stack ``lab up`` built is deleted
  through the lab's Heat API before Tacker creates its own;
* :mod:`.report`: instantiation and op occ states from Tacker's database;
* :mod:`.cluster`: the Kubernetes VIM the MgmtDriver registered, read back
  through ``VimClient``, and its nodes' readiness;
* :mod:`.run`: the verbs, each in one Tacker session.

Standard output is a JSON report; the exit status is 0 only when the op
occ is COMPLETED and (unless terminated) the instance INSTANTIATED with
every node Ready.

No Tacker code is patched. What stands in for a service that cannot exist
here, and why:

1. The message bus. oslo.messaging runs on its in-memory ``fake:/``
   transport (as in Tacker's own tests), and the LCM controller's
   ``rpc_api`` (``VNFLcmRPCAPI``) is :class:`.rpc_shim.InProcessRPC`,
   whose ``instantiate`` and ``send_notification`` hand the call to the
   conductor in this process (context and arguments serialized as on the
   wire, see :func:`.rpc_shim.deliver`), synchronously; so do its
   ``terminate``, ``heal``, ``scale`` and ``rollback``. The package API's
   two casts (``upload_vnf_package_content``, then ``load_csar_data``)
   become their effect: the state the first sets, then ``load_csar_data``
   delivered the same way.
2. Barbican. Tacker's Kubernetes VIM driver requires a key manager for the
   VIM the MgmtDriver registers; ``[key_manager] api_class`` names
   :class:`.keymgr.FileKeyManager`, which keeps the keys in files.
3. MySQL. The database is SQLite in memory (copied from
   ``D/tacker/tacker.sqlite`` at the start, back at the end), for three
   differences :mod:`.config` describes: one shared connection, as
   Tacker's DB tests have it (on an SQLite file Tacker's long-lived
   sessions lock each other out); a JSON_CONTAINS function for the
   subscription lookup of every notification; the VIM password stored as
   text, as MySQL stores it.

Everything else is Tacker's own: the VIM is registered and read back
through the NFVO plugin (the lab's Keystone answers it), the CSAR is stored
through glance_store's file backend (a library, no Glance service) and
onboarded by the conductor, the coordination lock uses tooz's file backend,
notifications find no subscription and send nothing, and the VNFD has no
image artifact, so no Glance image is uploaded. The conductor's periodic
DB sync starts as in Tacker and stays idle (its eventlet loop is never
scheduled in a process that is not monkey-patched).
"""
