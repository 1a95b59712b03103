"""The kubeadm mode: one module per LCM operation, each an ordered list of
phases; they never import each other."""
