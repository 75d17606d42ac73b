"""Postgres: tables, migrations and the SQL of the hot paths."""
