"""Hosts as Linux network namespaces on this machine: partitions, clock skew, restart, failover."""
