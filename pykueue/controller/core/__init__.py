"""The controller's core: the Workload and queue reconcilers around the engine, what they write and read."""
