"""Tests of the deployment files under deploy/: static checks and a real PostgreSQL instance."""
