"""The package's log messages, kept for a test to count (compiles, cache
hits): the "gated_attention" logger at INFO."""

import logging


def recorded(prefix=""):
    """A list that receives, from now on, every message of the
    "gated_attention" logger that starts with `prefix`."""
    messages = []

    class Keep(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith(prefix):
                messages.append(message)

    logger = logging.getLogger("gated_attention")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    return messages
