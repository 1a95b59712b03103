"""A small storage package for the lab's volume tests: one server with a
Cinder volume mapped as ``vdb`` (the storage flavour's shape) and, when
asked, a second volume attached through OS::Cinder::VolumeAttachment."""

TOP = '''
heat_template_version: 2016-10-14
parameters:
  size: {type: number, default: 1}
resources:
  storage_server_volume:
    type: OS::Cinder::Volume
    properties: {size: {get_param: size}}
  storage_server_CP:
    type: OS::Neutron::Port
    properties: {network: lab-net}
  storage_server:
    type: OS::Nova::Server
    properties:
      name: storage
      flavor: m1.small
      image: ubuntu-22.04-server-cloudimg-amd64
      block_device_mapping_v2:
        - {device_name: %(device)s,
           volume_id: {get_resource: storage_server_volume}, boot_index: -1}
      networks: [{port: {get_resource: storage_server_CP}}]
'''

EXTRA = '''
  extra_volume:
    type: OS::Cinder::Volume
    properties: {size: 2}
  extra_attachment:
    type: OS::Cinder::VolumeAttachment
    properties:
      volume_id: {get_resource: extra_volume}
      instance_uuid: {get_resource: storage_server}
'''


def write_package(folder, device='vdb', extra=False):
    """BaseHOT/storage/top.yaml under ``folder`` (a pathlib.Path); the
    package dir as a string."""
    base = folder / 'BaseHOT' / 'storage'
    base.mkdir(parents=True)
    (base / 'top.yaml').write_text(TOP % {'device': device} +
                                   (EXTRA if extra else ''))
    return str(folder)
