"""The types of a scale (a ScaleVnfRequest's ``type``) and the aspect the
lab scales when none is named: what ``k8s-mgmt lab scale`` offers, here
so that its parser has them without importing the conductor."""

SCALE_OUT = 'SCALE_OUT'
SCALE_IN = 'SCALE_IN'
# The workers' group of the sample VNF package.
DEFAULT_ASPECT = 'worker_instance'
