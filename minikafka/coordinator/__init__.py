"""Coordinators: domain logic over internal topics, reached only through the ports in ports.py."""
