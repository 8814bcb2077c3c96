"""Hosts: inventories, Ansible runs (prepare), SSH, facts and readiness."""
