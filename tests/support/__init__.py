"""Helpers shared by the tests: builders, fake servers, processes and paths. Test modules import
from here (and get fixtures from conftest.py), never from one another."""
