"""Sphinx configuration for the k8s-mgmt documentation."""

project = 'k8s-mgmt'
copyright = '2026, the k8s-mgmt developers'
extensions = ['oslo_config.sphinxext']
master_doc = 'index'
exclude_patterns = []
html_theme = 'alabaster'
