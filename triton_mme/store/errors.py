"""What the store refuses: one line naming the object and the problem."""

from __future__ import annotations

from triton_mme.core.errors import UserError


class PublishError(UserError):
    """Publishing cannot go ahead; the message is one line naming the object and the problem."""


class DifferentContentError(PublishError):
    """A key that is written once already holds other bytes; it is never overwritten."""
