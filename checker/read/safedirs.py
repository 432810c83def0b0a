"""Folders below one directory, opened by descriptor one component at a time, never through a link."""

from __future__ import annotations

import os


def open_subdir(base_fd: int, parts: list[str], *, mode: int) -> int:
    """A new descriptor for base/parts[0]/parts[1]/..., creating missing folders with `mode`.

    Every component is opened with O_NOFOLLOW relative to its parent's descriptor, so a symlink
    planted anywhere on the way (by an archive member, say) can never lead outside `base_fd`.
    Components must already be plain names: the caller rejects "", ".", ".." and separators.
    """
    fd = os.dup(base_fd)
    try:
        for component in parts:
            try:
                os.mkdir(component, mode, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(component, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd
