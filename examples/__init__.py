"""Example services that use aioseq: see README.md in this folder."""
