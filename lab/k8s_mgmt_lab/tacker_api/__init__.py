"""The lab's client of Tacker's v1 REST API, as an operator's tools use it.

    tacker = client.Tacker.for_plane(plane)        # the plane's admin
    package = tacker.packages.onboard('pkg.zip', deadline=120)
    instance = tacker.instances.create(package['vnfdId'], name='lab')
    op_id = tacker.instances.instantiate(instance['id'], request)
    tacker.op_occs.wait(op_id, deadline=600)       # COMPLETED, or raises

Each module holds one part: ``errors`` the one exception and how Tacker's
answers become one line, ``rest`` the keystoneauth requests with their
timeouts, ``packages`` the VNF packages (/vnfpkgm/v1), ``instances`` the
VNF instances and their LCM calls (/vnflcm/v1), ``op_occs`` the operation
occurrences those calls start, ``client`` the three together.
"""
