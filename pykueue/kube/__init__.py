"""Mechanisms with no Kueue policy: the API client, informers, work queues (kopf's `_cogs`)."""
