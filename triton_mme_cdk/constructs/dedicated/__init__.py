"""The dedicated models: the catalog's `placement: dedicated` entries as inference components on an endpoint
of their own."""
