"""The webhook bot: a GitHub App front door to the same router as the Action.

The web process (`web.create_app`) verifies, records and enqueues; workers (`worker`) run each
delivery as a job (`job`). The values and protocols the parts share are in `ports`; the adapters
behind them are the delivery log (`deliveries`: SQLite, `redis_stores`: Redis), the claims
(`claims`, `redis_stores`), and the executors (`executors`); `stores` picks the log and claims.
Nothing happens at import time.
"""
