"""Invoke the multi-model endpoint: build Triton requests from images, text or arrays and read replies.

`python -m model_build.invoke --help` documents the command; `payloads` holds the pure request and
reply functions that other tools reuse.
"""
