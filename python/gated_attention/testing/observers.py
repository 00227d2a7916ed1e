"""What the tests of the torch ops' direct paths watch with: which path a
call took, which ops a dispatch mode saw, what torch.compile traced."""

from torch.utils._python_dispatch import TorchDispatchMode


class PathSpy:
    """Replaces `module.name` (an op's direct path, which returns None where
    the call must go through the dispatcher) with a wrapper that records
    whether it returned a result."""

    def __init__(self, module, name):
        self.taken = []
        real = getattr(module, name)

        def spy(*args):
            out = real(*args)
            self.taken.append(out is not None)
            return out

        setattr(module, name, spy)

    def call(self, fn, *args, direct, **kw):
        """fn(*args, **kw), asserting that it ran directly or not."""
        self.taken.clear()
        out = fn(*args, **kw)
        assert self.taken == [direct], (self.taken, direct, kw)
        return out


class Recorder(TorchDispatchMode):
    """A dispatch mode that records the name of every op it sees."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def graph_recorder():
    """(backend, graphs): a torch.compile backend that appends each graph's
    node targets to `graphs` and runs it as traced."""
    graphs = []

    def backend(gm, _inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes])
        return gm.forward

    return backend, graphs
