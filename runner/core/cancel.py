"""The one way a run stops at a checkpoint, raised from the pure pipeline as from a job."""


class Cancelled(Exception):
    """The run stopped at a checkpoint: cancel requested, lease lost, or the worker stopping."""
