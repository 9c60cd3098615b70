"""The model store: the bucket, its grants, and the promotion of a checked build to the live manifest."""
