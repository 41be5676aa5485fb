"""The Python reference binding of acemq (package ``acemq``) and its peer adapter."""
