"""The lab's VNF through its real Tacker, as an operator drives it.

A lab with a control plane of its own runs tacker-server and
tacker-conductor (with our driver installed in the conductor's
environment). ``lab up`` registers the lab's OpenStack as Tacker's default
VIM (``vim``); ``lab instantiate|scale|heal|terminate`` and ``lab
retry|rollback|fail`` call Tacker's v1 REST API and wait for the operation
occurrence (``operations``); after each, the lab record names Tacker's
instance, stack and VNFCs (``record``), so that ``lab status``, ``lab kill
--vnfc`` and the tests see what Tacker made.
"""
