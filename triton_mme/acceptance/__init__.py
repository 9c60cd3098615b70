"""`triton-mme acceptance`: after a deploy, prove the live endpoint does what its stack promised."""
