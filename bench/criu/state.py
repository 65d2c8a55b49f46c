"""Shared state builder + checksum for the CRIU vs pickle study (stdlib only)."""
import hashlib
import random
from array import array


class Item:
    __slots__ = ("id", "name", "score")

    def __init__(self, id, name, score):
        self.id = id
        self.name = name
        self.score = score

    # pickle support for __slots__ classes without __dict__ works by default
    # (protocol >= 2), nothing to add.


def build(seed=12345, n_items=100_000, blob_mb=5, n_floats=100_000):
    rng = random.Random(seed)
    items = {i: Item(i, f"item-{i}", rng.random()) for i in range(n_items)}
    blob = rng.randbytes(blob_mb * 1024 * 1024)
    floats = [rng.random() for _ in range(n_floats)]
    return {"items": items, "blob": blob, "floats": floats}


def checksum(state):
    h = hashlib.sha256()
    h.update(state["blob"])
    h.update(array("d", state["floats"]).tobytes())
    for k, v in state["items"].items():  # incremental: no big temp string
        h.update(f"{k}:{v.id},{v.name},{v.score!r};".encode())
    return h.hexdigest()
