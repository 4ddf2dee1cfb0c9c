"""The webhook bot: a GitHub App front door to the same router as the Action.

The web process (`web.create_app`) verifies, records and enqueues; workers (`worker`) run the
work. Nothing happens at import time.
"""
