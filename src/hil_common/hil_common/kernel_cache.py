"""Numba's disk cache of a kernel module that compiles in another module's kernels, kept in step with that module.

Numba (``cache=True``) keys a kernel's cached machine code on its own source file only: Numba 0.68 stores a hash of
that file with the code. A kernel that calls a compiled function of another module has that function compiled into
it, so after a change to the other module alone it goes on loading the old code from its cache. Measured here
(``test_kernel_cache``): ``g`` calling ``dep.f`` kept returning ``f``'s old value after ``f`` changed, until ``g``'s
own file changed. A lab that updates its checkout would run the old arithmetic of, say, ``chain_rnea`` inside the
OBSW's kernel, while its tests of ``chain_rnea`` itself pass.

:func:`drop_stale_code` is called at the end of each such module with the modules it compiles in. It keeps a hash
of their sources beside the module's cache and, when it differs, empties the cache index of every cached kernel of
the module, so each is compiled again at its next call (``./dev`` makes that call when it installs, so no node pays
for it in a callback).

No Numba import here: the kernels are told by their attributes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType


def _cached_kernels(namespace: dict) -> list:
    """The Numba dispatchers defined in the module of ``namespace`` whose code is cached on disk."""
    name = namespace.get('__name__')
    out = []
    for value in list(namespace.values()):
        cache = getattr(value, '_cache', None)
        py_func = getattr(value, 'py_func', None)
        if py_func is None or getattr(py_func, '__module__', None) != name or not hasattr(cache, 'cache_path'):
            continue         # not a kernel of this module, or one without a disk cache (numba's NullCache)
        out.append(value)
    return out


def sources_digest(*dependencies: ModuleType) -> str:
    """A hash of the dependencies' source files, in the order given."""
    h = hashlib.sha256()
    for module in dependencies:
        path = Path(module.__file__)
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def drop_stale_code(namespace: dict, *dependencies: ModuleType) -> bool:
    """Call at the end of a kernel module as ``drop_stale_code(globals(), dep, ...)``, with every module whose
    compiled functions its kernels call (directly or through each other). Returns True if the dependencies
    changed since the module's kernels were cached, in which case their cached code is dropped (each kernel's
    index emptied) and they are compiled again when next called. A cache directory that cannot be written
    changes nothing here; Numba then does not cache either."""
    kernels = _cached_kernels(namespace)
    if not kernels:
        return False
    digest = sources_digest(*dependencies)
    cache_dir = Path(kernels[0]._cache.cache_path)
    stamp = cache_dir / f'{Path(namespace["__file__"]).stem}.dependencies'      # also when run as __main__
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass                         # no stamp yet: a fresh cache, or one made before the stamp existed
    try:
        for kernel in kernels:
            kernel._cache.flush()    # Numba's own: saves an empty index, so the next call compiles and saves
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f'{stamp.name}.{os.getpid()}.tmp')
        tmp.write_text(digest)
        os.replace(tmp, stamp)       # atomic: processes that start together see one stamp or the other
    except OSError:
        return False
    return True
