"""The lab's stand-in for Nova, Neutron, Cinder and Glance: one shared
state (:mod:`.model`) changed by the compute, network and storage
operations, served over HTTP to real Heat (:mod:`.serve`)."""
