"""Lambda functions from a folder of plain Python, each with a role that may write only its own log group."""
