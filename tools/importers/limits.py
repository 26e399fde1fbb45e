"""The sizes the importers refuse before anything is allocated: placer's model-format limits
(docs/model-format.md) and this machine's memory. A shape past them is bad input, so it
gets an error naming it instead of a PyTorch or numpy allocation failure.
"""

import os
import re

from builder import ImportError_

MAX_DIM = 2 ** 31 - 1        # every dimension
MAX_ELEMENTS = 2 ** 31       # every tensor
MAX_SAMPLE_RANK = 5          # an input's rank per sample (the batch adds one)


def memory_bytes():
    """The machine's physical memory, or the container's share of it (cgroup v2's
    memory.max) where that is less: no import may need more."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = 2 ** 63
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            share = f.read().strip()
    except OSError:
        return physical
    return min(physical, int(share)) if share.isdigit() else physical


def cap_memory():
    """Limits this process's data to the machine's memory, so that a model too big for it
    fails an allocation (an error naming it) rather than waking the kernel's OOM killer."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = memory_bytes()
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        try:
            resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
        except (ValueError, OSError):  # a system that will not have it: no cap, as before
            pass


def out_of_memory(e):
    """For an allocation failure (numpy's MemoryError, PyTorch's RuntimeError), its short
    description; None for any other exception."""
    if isinstance(e, MemoryError):
        return "out of memory"
    m = re.search(r"can't allocate memory: you tried to allocate (\d+) bytes", str(e))
    if isinstance(e, RuntimeError) and m:
        return "out of memory: PyTorch could not allocate %s" % size_text(int(m.group(1)))
    return None


def size_text(n):
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    for unit in units:
        if n < 1024 or unit == units[-1]:
            return "%d %s" % (n, unit) if unit == "bytes" else "%.1f %s" % (n, unit)
        n /= 1024.0


def check_dims(where, dims):
    """Each dimension a whole number in 1 .. 2^31 - 1."""
    for d in dims:
        if not 1 <= d <= MAX_DIM:
            raise ImportError_("%s: dimension %d is outside 1 .. %d" % (where, d, MAX_DIM))


def check_input(where, batch, sample_shape, element_bytes):
    """An input of `batch` samples shaped `sample_shape`: within the format's limits.
    Returns its size in bytes (as the importer holds it: element_bytes per element)."""
    check_dims(where, sample_shape)
    if len(sample_shape) > MAX_SAMPLE_RANK:
        raise ImportError_("%s: rank %d per sample is more than placer's limit of %d"
                           % (where, len(sample_shape), MAX_SAMPLE_RANK))
    elements = batch
    for d in sample_shape:
        elements *= d
    if elements > MAX_ELEMENTS:
        raise ImportError_("%s: %s elements at batch %d, more than placer's limit of 2^31 per "
                           "tensor" % (where, "{:,}".format(elements), batch))
    return elements * element_bytes


def check_memory(where, needed):
    if needed > memory_bytes():
        raise ImportError_("%s: needs %s, more than this machine's memory (%s)"
                           % (where, size_text(needed), size_text(memory_bytes())))
