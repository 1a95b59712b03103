"""The Ansible server the kubespray mode drives: its files, trust,
inventory, and one ``ansible-playbook`` run with its streamed events."""
